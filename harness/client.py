"""One call to any model, normalized for the harness: text, token counts, cache hits, latency.

Everything goes through litellm. `local/<model>` runs our engine in-process (harness/local_provider.py
registers it as a litellm provider); every other string is a plain litellm model (`openai/<m>` or
`hosted_vllm/<m>` with `api_base` for `deltaserve serve` or vLLM, `anthropic/...`, ...).
Fields a provider does not report are None, never guessed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import litellm

# Importing the provider registers `local/<model>` with litellm; its engine registry is re-exported for
# callers.
from deltaserve.harness.early_stop import EARLY_STOP
from deltaserve.harness.local_provider import local_engine, register_local_engine

__all__ = ["Completion", "complete", "complete_candidates", "local_engine", "register_local_engine"]


@dataclass
class Completion:
    text: str
    model: str
    finish_reason: str | None
    prompt_tokens: int | None
    cached_tokens: int | None  # None = the provider did not say
    completion_tokens: int | None
    ttft_s: float | None
    decode_s: float | None
    decode_passes: int | None
    accepted_draft_tokens: int | None
    rejected_draft_tokens: int | None
    latency_s: float
    metrics: dict | None = None  # the server's `metrics` extension object, as sent
    # every reply when several were asked for (texts[0] is `text`); the token counts above are their sums,
    # with the shared prompt counted once
    texts: list[str] = field(default_factory=list)
    finish_reasons: list[str | None] = field(default_factory=list)  # each reply's, in `texts` order
    # why the reply was cut as it streamed (harness/early_stop.py; finish_reason EARLY_STOP), else None
    stopped_early: str | None = None

    def __post_init__(self) -> None:
        self.texts = self.texts or [self.text]
        if len(self.finish_reasons) != len(self.texts):  # unknown per reply: the call's for each
            self.finish_reasons = [self.finish_reason] * len(self.texts)

    def reply(self, index: int) -> Completion:
        """This completion with reply `index` as its text (the counts stay the whole call's)."""
        return replace(self, text=self.texts[index], finish_reason=self.finish_reasons[index])


def _get(obj: Any, name: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _find_metrics(obj: Any) -> dict | None:
    """Our server's (or the local provider's) `metrics` extension, wherever litellm left it."""
    for candidate in (_get(obj, "metrics"), _get(_get(obj, "_hidden_params"), "metrics"),
                      _get(_get(obj, "provider_specific_fields"), "metrics")):
        if isinstance(candidate, dict):
            return candidate
    return None


def complete(model: str, messages: list[dict], max_tokens: int = 512, api_base: str | None = None,
             temperature: float = 0.0, prediction: str | None = None, stream: bool = False,
             watch: Callable[[str], str | None] | None = None, **kwargs: Any) -> Completion:
    """Ask `model` for one reply; extra keyword arguments go straight to litellm.completion. `watch`
    (streams the reply): called with the text so far at each new line; a reason it returns ends the reply
    there (finish_reason EARLY_STOP, the reason in `stopped_early`) and closes the stream."""
    call: dict[str, Any] = dict(model=model, messages=messages, max_tokens=max_tokens,
                                temperature=temperature)
    if api_base is not None:
        call["api_base"] = api_base
        call.setdefault("api_key", kwargs.pop("api_key", None) or "EMPTY")  # local servers take any key
    if prediction is not None:
        call["prediction"] = {"type": "content", "content": prediction}
    if "cache_salt" in kwargs:  # our server's extension: a body field, not an OpenAI parameter
        call.setdefault("extra_body", {})["cache_salt"] = kwargs.pop("cache_salt")
    call.update(kwargs)

    t0 = time.perf_counter()
    # a scripted reply given whole (litellm's mock_response as a response dict) cannot stream: its watch
    # reads the finished text instead, cutting it where a stream would have stopped
    scripted_whole = isinstance(call.get("mock_response"), dict)
    if not stream and (watch is None or scripted_whole):
        response = litellm.completion(**call)
        latency = time.perf_counter() - t0
        choice = response.choices[0]
        metrics = _find_metrics(response)
        result = _completion(model, choice.message.content or "", choice.finish_reason, response.usage,
                             metrics, latency, ttft_s=None, decode_s=None)
        result.texts = [c.message.content or "" for c in response.choices]
        result.finish_reasons = [c.finish_reason for c in response.choices]
        return result if watch is None else _watched(result, watch)
    return _streamed(model, call, t0, watch)


def _watched(result: Completion, watch: Callable[[str], str | None]) -> Completion:
    """A whole reply cut where its watch, fed it a line at a time, would have stopped its stream."""
    text = result.text
    for end in (i + 1 for i, c in enumerate(text) if c == "\n"):
        stopped = watch(text[:end])
        if stopped:
            cut = replace(result, text=text[:end], texts=[text[:end]], finish_reason=EARLY_STOP,
                          finish_reasons=[EARLY_STOP])
            cut.stopped_early = stopped
            return cut
    return result


def complete_candidates(n: int, model: str, messages: list[dict], call=None, **kwargs: Any) -> Completion:
    """`n` replies of one prompt as one Completion (`texts`). One request with OpenAI's `n` (our local
    engine decodes them in one continuous batch); a provider that sends fewer choices gets the rest as
    further requests of the same prompt, whose prefill a prefix cache can serve. Counted honestly: the
    prompt once, every request's computed prompt tokens, every reply's decode tokens and passes (see
    `combined`). `call` replaces `complete` (a scripted model)."""
    call = call or complete
    first = call(model=model, messages=messages, n=n, **kwargs)
    more = [call(model=model, messages=messages, **{**kwargs, "seed": (kwargs.get("seed") or 0) + i})
            for i in range(len(first.texts), n)]
    return combined(first, more) if more else first


def combined(first: Completion, more: list[Completion]) -> Completion:
    """Several calls of one prompt as one Completion (`first`'s text): the prompt and its cached tokens
    counted once (`first`'s), every call's computed prompt tokens (metrics' `prefill_tokens_computed`),
    decode tokens, passes and seconds summed."""
    everyone = [first, *more]

    def total(name: str):
        values = [getattr(c, name) for c in everyone]
        return None if any(v is None for v in values) else sum(values)

    computed = [_computed(c) for c in everyone]
    own = [_per_choice(c) for c in everyone]
    metrics = {**(first.metrics or {})}
    if None not in own:
        metrics["choices"] = sum(own, [])
    if None not in computed:
        metrics["prefill_tokens_computed"] = sum(computed)
    return replace(first, completion_tokens=total("completion_tokens"), metrics=metrics or first.metrics,
                   decode_s=total("decode_s"), decode_passes=total("decode_passes"),
                   accepted_draft_tokens=total("accepted_draft_tokens"),
                   rejected_draft_tokens=total("rejected_draft_tokens"),
                   latency_s=sum(c.latency_s for c in everyone),
                   texts=[t for c in everyone for t in c.texts],
                   finish_reasons=[r for c in everyone for r in c.finish_reasons])


def _computed(c: Completion) -> int | None:
    """The prompt tokens a call computed: as the engine counted them, else its prompt less its cached part."""
    said = (c.metrics or {}).get("prefill_tokens_computed")
    if said is not None:
        return said
    return None if c.cached_tokens is None or c.prompt_tokens is None else c.prompt_tokens - c.cached_tokens


def _per_choice(c: Completion) -> list[dict] | None:
    """Each of a call's replies' own counts (texts order): the server's per-choice metrics, or the call's
    totals when it sent one reply; None when unknown."""
    own = (c.metrics or {}).get("choices")
    if own and len(own) == len(c.texts):
        return list(own)
    if len(c.texts) == 1:
        return [{"completion_tokens": c.completion_tokens, "decode_passes": c.decode_passes}]
    return None


def _streamed(model: str, call: dict[str, Any], t0: float,
              watch: Callable[[str], str | None] | None = None) -> Completion:
    call["stream"] = True
    call.setdefault("stream_options", {"include_usage": True})
    text: list[str] = []
    t_first = t_last = None
    finish_reason = usage = metrics = stopped = None
    chunks = litellm.completion(**call)
    for chunk in chunks:
        metrics = _find_metrics(chunk) or metrics
        if _get(chunk, "usage") is not None:
            usage = chunk.usage
        for choice in chunk.choices or ():
            delta = choice.delta
            metrics = _find_metrics(delta) or metrics
            if delta.content:
                t_last = time.perf_counter()
                t_first = t_first or t_last
                text.append(delta.content)
                if watch is not None and "\n" in delta.content:
                    stopped = watch("".join(text))
            finish_reason = choice.finish_reason or finish_reason
        if stopped:
            getattr(chunks, "close", lambda: None)()  # the server (or local engine) drops the request
            finish_reason = EARLY_STOP
            break
    latency = time.perf_counter() - t0
    result = _completion(model, "".join(text), finish_reason, usage, metrics, latency,
                         ttft_s=None if t_first is None else t_first - t0,
                         decode_s=None if t_first is None else t_last - t_first)
    result.stopped_early = stopped
    return result


def _completion(model: str, text: str, finish_reason: str | None, usage: Any, metrics: dict | None,
                latency: float, ttft_s: float | None, decode_s: float | None) -> Completion:
    prompt_details = _get(usage, "prompt_tokens_details")
    completion_details = _get(usage, "completion_tokens_details")
    if ttft_s is None and metrics and metrics.get("ttft_ms") is not None:
        ttft_s = metrics["ttft_ms"] / 1000  # non-streaming: the engine's own measurement
    if decode_s is None and metrics and metrics.get("decode_ms") is not None:
        decode_s = metrics["decode_ms"] / 1000
    return Completion(
        text=text,
        model=model,
        finish_reason=finish_reason,
        prompt_tokens=_get(usage, "prompt_tokens"),
        # a stream stopped early has no usage; the metrics so far say what was cached (local engine)
        cached_tokens=_get(prompt_details, "cached_tokens") if usage is not None else (metrics or {}).get(
            "cached_tokens"),
        completion_tokens=_get(usage, "completion_tokens"),
        ttft_s=ttft_s,
        decode_s=decode_s,
        decode_passes=metrics.get("decode_passes") if metrics else None,
        accepted_draft_tokens=_get(completion_details, "accepted_prediction_tokens"),
        rejected_draft_tokens=_get(completion_details, "rejected_prediction_tokens"),
        latency_s=latency,
        metrics=metrics,
    )
