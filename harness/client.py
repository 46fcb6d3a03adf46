"""One call to any model, normalized for the harness: text, token counts, cache hits, latency.

Everything goes through litellm. `local/<model>` runs our engine in-process, registered as a litellm
CustomLLM provider (`LocalEngineLLM`); every other string is a plain litellm model (`openai/<m>` or
`hosted_vllm/<m>` with `api_base` for `deltaserve serve` or vLLM, `anthropic/...`, ...).
Fields a provider does not report are None, never guessed.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# litellm otherwise fetches its model price list from the internet on import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402
from litellm.llms.custom_llm import CustomLLMError  # noqa: E402
from litellm.types.utils import Choices, Message, ModelResponse, Usage  # noqa: E402

LOCAL_PROVIDER = "local"
litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners: the harness reports the error itself


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


# ---------------------------------------------------------------- in-process engines

_engines: dict[str, Any] = {}
_engine_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


def local_engine(name: str, **engine_kwargs: Any) -> Any:
    """The process-wide Engine behind `local/<name>` (created on first use with `engine_kwargs`)."""
    with _registry_lock:
        if name not in _engines:
            from deltaserve.engine import Engine

            _engines[name] = Engine.from_pretrained(name, **engine_kwargs)
            _engine_locks[name] = threading.Lock()
        return _engines[name]


def register_local_engine(name: str, engine: Any) -> None:
    """Serve an already built Engine as `local/<name>` (e.g. one made with non-default options)."""
    with _registry_lock:
        _engines[name] = engine
        _engine_locks[name] = threading.Lock()


def _sampling_params(optional_params: dict) -> tuple[Any, str | None]:
    from deltaserve.engine import SamplingParams

    p = dict(optional_params)
    extra = p.pop("extra_body", None) or {}
    p.update(extra)
    stop = p.get("stop") or []
    prediction = p.get("prediction")
    if isinstance(prediction, dict):  # OpenAI's {"type": "content", "content": str | text parts}
        from deltaserve.engine.openai_protocol import Prediction

        prediction = Prediction.model_validate(prediction).text()
    max_tokens = p.get("max_completion_tokens") or p.get("max_tokens") or 256
    params = SamplingParams(
        max_tokens=max_tokens,
        temperature=p.get("temperature", 0.0) if p.get("temperature") is not None else 0.0,
        top_k=max(int(p.get("top_k") or 0), 0),
        top_p=p.get("top_p") if p.get("top_p") is not None else 1.0,
        seed=p.get("seed"),
        stop=[stop] if isinstance(stop, str) else list(stop),
        ignore_eos=bool(p.get("ignore_eos", False)),
        prediction=prediction or None,
    )
    return params, p.get("cache_salt")


def _run_local(name: str, messages: list, optional_params: dict) -> Iterator[Any]:
    """RequestOutputs of one request on the in-process engine; holds that engine's lock meanwhile. The
    engine's refusals reach litellm with an HTTP status (else litellm reports them as its own bugs)."""
    from deltaserve.engine.errors import ModelNotFoundError

    try:
        yield from _run_local_unmapped(name, messages, optional_params)
    except ModelNotFoundError as exc:
        raise CustomLLMError(404, str(exc)) from exc
    except ValueError as exc:  # InvalidRequestError, bad sampling parameters
        raise CustomLLMError(400, str(exc)) from exc


def _run_local_unmapped(name: str, messages: list, optional_params: dict) -> Iterator[Any]:
    eng = local_engine(name)
    params, cache_salt = _sampling_params(optional_params)
    with _engine_locks[name]:
        try:
            yield from eng.stream(eng.apply_chat_template(messages), params, cache_salt=cache_salt)
        finally:  # a caller that stopped reading had its request aborted; report it now, leaving the engine idle
            while eng.has_unfinished():
                eng.step()


def _usage_and_metrics(m: Any) -> tuple[dict, dict]:
    """The `usage` block (less the reasoning_tokens litellm leaves unset) and `metrics` object the server sends."""
    from deltaserve.engine.openai_protocol import usage_and_metrics

    usage, metrics = usage_and_metrics([(0, m)])
    return usage.model_dump(exclude={"completion_tokens_details": {"reasoning_tokens"}}), metrics.model_dump()


def _check(out: Any) -> None:
    if out.finish_reason == "error":
        raise litellm.exceptions.InternalServerError(
            message=f"local engine failed the request: {out.error}", llm_provider=LOCAL_PROVIDER, model="")


class LocalEngineLLM(CustomLLM):
    """litellm provider `local/<model>`: our engine, in this process."""

    def completion(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                   model_response: ModelResponse, print_verbose: Any, encoding: Any, api_key: Any,
                   logging_obj: Any, optional_params: dict, *args: Any, **kwargs: Any) -> ModelResponse:
        *_, last = _run_local(model, messages, optional_params)
        _check(last)
        model_response.model = f"{LOCAL_PROVIDER}/{model}"
        model_response.choices = [Choices(index=0, finish_reason=last.finish_reason,
                                          message=Message(role="assistant", content=last.text))]
        usage, metrics = _usage_and_metrics(last.metrics)
        model_response.usage = Usage(**usage)
        model_response.metrics = metrics
        return model_response

    def streaming(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                  model_response: ModelResponse, print_verbose: Any, encoding: Any, api_key: Any,
                  logging_obj: Any, optional_params: dict, *args: Any, **kwargs: Any) -> Iterator[dict]:
        for out in _run_local(model, messages, optional_params):
            _check(out)
            chunk = {"text": out.new_text or "", "is_finished": out.finished,
                     "finish_reason": out.finish_reason or "", "usage": None, "index": 0}
            if out.finished:
                usage, metrics = _usage_and_metrics(out.metrics)
                chunk["usage"] = usage
                chunk["provider_specific_fields"] = {"metrics": metrics}
            yield chunk

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await asyncio.to_thread(self.completion, *args, **kwargs)

    async def astreaming(self, *args: Any, **kwargs: Any):
        chunks = self.streaming(*args, **kwargs)
        try:
            while (chunk := await asyncio.to_thread(next, chunks, None)) is not None:
                yield chunk
        finally:
            await asyncio.to_thread(chunks.close)


_local_llm = LocalEngineLLM()


def register_local_provider() -> None:
    """Make `local/<model>` resolvable by litellm (idempotent)."""
    if not any(entry.get("provider") == LOCAL_PROVIDER for entry in litellm.custom_provider_map):
        litellm.custom_provider_map = [*litellm.custom_provider_map,
                                       {"provider": LOCAL_PROVIDER, "custom_handler": _local_llm}]
    litellm.utils.custom_llm_setup()


register_local_provider()


# ---------------------------------------------------------------- the call the harness makes


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
             **kwargs: Any) -> Completion:
    """Ask `model` for one reply; extra keyword arguments go straight to litellm.completion."""
    call: dict[str, Any] = dict(model=model, messages=messages, max_tokens=max_tokens, temperature=temperature)
    if api_base is not None:
        call["api_base"] = api_base
        call.setdefault("api_key", kwargs.pop("api_key", None) or "EMPTY")  # local servers take any key
    if prediction is not None:
        call["prediction"] = {"type": "content", "content": prediction}
    if "cache_salt" in kwargs:  # our server's extension: a body field, not an OpenAI parameter
        call.setdefault("extra_body", {})["cache_salt"] = kwargs.pop("cache_salt")
    call.update(kwargs)

    t0 = time.perf_counter()
    if not stream:
        response = litellm.completion(**call)
        latency = time.perf_counter() - t0
        choice = response.choices[0]
        metrics = _find_metrics(response)
        return _completion(model, choice.message.content or "", choice.finish_reason, response.usage, metrics,
                           latency, ttft_s=None, decode_s=None)

    call["stream"] = True
    call.setdefault("stream_options", {"include_usage": True})
    text: list[str] = []
    t_first = t_last = None
    finish_reason = usage = metrics = None
    for chunk in litellm.completion(**call):
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
            finish_reason = choice.finish_reason or finish_reason
    latency = time.perf_counter() - t0
    return _completion(model, "".join(text), finish_reason, usage, metrics, latency,
                       ttft_s=None if t_first is None else t_first - t0,
                       decode_s=None if t_first is None else t_last - t_first)


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
        cached_tokens=_get(prompt_details, "cached_tokens"),
        completion_tokens=_get(usage, "completion_tokens"),
        ttft_s=ttft_s,
        decode_s=decode_s,
        decode_passes=metrics.get("decode_passes") if metrics else None,
        accepted_draft_tokens=_get(completion_details, "accepted_prediction_tokens"),
        rejected_draft_tokens=_get(completion_details, "rejected_prediction_tokens"),
        latency_s=latency,
        metrics=metrics,
    )
