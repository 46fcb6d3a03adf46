"""`local/<model>`: our engine in this process, as a litellm CustomLLM provider.

The only harness module that imports the engine. It keeps the process-wide registry of engines behind
`local/<name>` and answers the questions the agent asks about a model that only a local engine can answer
(its context window, its chat template, its tokenizer); for any other model those answers are None.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import Any

import litellm
from litellm import CustomLLM
from litellm.llms.custom_llm import CustomLLMError
from litellm.types.utils import Choices, Message, ModelResponse, Usage
from transformers import AutoTokenizer

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.model_source import tokenizer_dir
from deltaserve.engine.passing_thread import awaited_on_passing_thread, iterated_on_passing_thread
from deltaserve.engine.server.openai_protocol import (
    Prediction,
    ResponseFormat,
    StructuredOutputs,
    usage_and_metrics,
)
from deltaserve.engine.server.structured import format_spec, outputs_spec
from deltaserve.errors import ModelNotFoundError
from deltaserve.harness.providers import LOCAL_PROVIDER, PREFIX, local_name

# Reply tokens for a request that names no max_tokens.
DEFAULT_MAX_TOKENS = 256
# no "Give Feedback / Get Help" banners: the harness reports the error itself
litellm.suppress_debug_info = True


# ---------------------------------------------------------------- in-process engines

_engines: dict[str, Engine] = {}
_engine_locks: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


def local_engine(name: str, **engine_kwargs: Any) -> Engine:
    """The process-wide Engine behind `local/<name>` (created on first use with `engine_kwargs`)."""
    with _registry_lock:
        if name not in _engines:
            _engines[name] = Engine.from_pretrained(name, **engine_kwargs)
            _engine_locks[name] = threading.Lock()
        return _engines[name]


def register_local_engine(name: str, engine: Engine) -> None:
    """Serve an already built Engine as `local/<name>` (e.g. one made with non-default options)."""
    with _registry_lock:
        _engines[name] = engine
        _engine_locks[name] = threading.Lock()


def load(model: str, num_threads: int | None = None, **engine_options: Any) -> None:
    """Build a `local/` model's engine now (a wrong name fails here, not at the first model call) with
    EngineConfig options (e.g. kv_cache_dir); other providers need nothing loaded."""
    if (name := local_name(model)) is not None:
        local_engine(name, **({"num_threads": num_threads} if num_threads else {}), **engine_options)


def engine_numerics(model: str) -> dict | None:
    """How a loaded `local/` model's engine computes (dtype, quant, deterministic); None for others."""
    name = local_name(model)
    return None if name is None or name not in _engines else _engines[name].numerics


def context_window(model: str) -> int | None:
    """A `local/` model's context length; None for hosted models (their windows dwarf our context caps)."""
    name = local_name(model)
    return None if name is None else local_engine(name).max_model_len


def prompt_tokens(model: str, messages: list[dict]) -> int | None:
    """Tokens of `messages` after a `local/` model's chat template; None for other providers."""
    name = local_name(model)
    return None if name is None else len(local_engine(name).apply_chat_template(messages))


def local_tokenizer(model: str):
    """The model's own tokenizer when we can have it without downloading anything: the in-process engine's for
    `local/<name>`; for `provider/<name>` (e.g. `openai/smollm2-135m` against `deltaserve serve`) the
    tokenizer files of a model our engine's loader resolves (model_source.tokenizer_dir: read alone, no
    weights) or one already in the Hugging Face cache. None when there is none."""
    if (name := local_name(model)) is not None:
        return local_engine(name).tokenizer
    name = model.split("/", 1)[1] if "/" in model else model
    try:
        try:
            return AutoTokenizer.from_pretrained(tokenizer_dir(name))
        except ModelNotFoundError:
            pass
        return AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError):
        return None


def loaded_tokenizer(model: str):
    """The tokenizer of the engine this process runs for `local/<name>`; None when none is loaded (loads
    nothing)."""
    name = local_name(model)
    engine = _engines.get(name) if name is not None else None
    return engine.tokenizer if engine is not None else None


# ---------------------------------------------------------------- the litellm provider


# what a local/ request may ask (litellm's optional params, extra_body's merged in); anything else is a 400
# naming it, never silently dropped (tools: the server's parser and grammar, `deltaserve serve`)
LOCAL_PARAMS = frozenset({
    "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k", "seed", "stop", "n", "stream",
    "stream_options", "ignore_eos", "prediction", "response_format", "structured_outputs", "cache_salt",
    "presence_penalty", "frequency_penalty"})
TOOL_PARAMS = frozenset({"tools", "tool_choice", "parallel_tool_calls", "functions", "function_call"})


def _refuse_unsupported(p: dict) -> None:
    """ValueError (a 400) naming the parameters a local/ engine does not implement."""
    unsupported = sorted(k for k, v in p.items() if k not in LOCAL_PARAMS and v is not None)
    if not unsupported:
        return
    hint = (" (for tool calls serve the model with `deltaserve serve` and call it through its URL)"
            if TOOL_PARAMS & set(unsupported) else "")
    raise ValueError(f"a local/ model does not implement {', '.join(unsupported)}{hint}")


def _sampling_params(optional_params: dict) -> tuple[SamplingParams, str | None]:
    p = dict(optional_params)
    extra = p.pop("extra_body", None) or {}
    p.update(extra)
    _refuse_unsupported(p)
    stop = p.get("stop") or []
    prediction = p.get("prediction")
    if isinstance(prediction, dict):  # OpenAI's {"type": "content", "content": str | text parts}
        prediction = Prediction.model_validate(prediction).text()
    params = SamplingParams(
        grammar=_grammar(p),
        max_tokens=p.get("max_completion_tokens") or p.get("max_tokens") or DEFAULT_MAX_TOKENS,
        temperature=p.get("temperature") if p.get("temperature") is not None else 0.0,
        top_k=max(int(p.get("top_k") or 0), 0),
        top_p=p.get("top_p") if p.get("top_p") is not None else 1.0,
        seed=p.get("seed"),
        stop=[stop] if isinstance(stop, str) else list(stop),
        ignore_eos=bool(p.get("ignore_eos", False)),
        prediction=prediction or None,
        presence_penalty=p.get("presence_penalty") or 0.0,
        frequency_penalty=p.get("frequency_penalty") or 0.0,
    )
    return params, p.get("cache_salt")


def _grammar(p: dict):
    """response_format or the structured_outputs extension (edits constraints included), as on our server."""
    outputs, fmt = p.get("structured_outputs"), p.get("response_format")
    if outputs is not None and fmt is not None:
        raise ValueError("response_format and structured_outputs cannot both be given")
    if outputs is not None:
        return outputs_spec(StructuredOutputs.model_validate(outputs))
    if isinstance(fmt, dict):
        return format_spec(ResponseFormat.model_validate(fmt))
    return None


def _run_local(name: str, messages: list, optional_params: dict) -> Iterator[Any]:
    """RequestOutputs of one request on the in-process engine; holds that engine's lock meanwhile. The
    engine's refusals reach litellm with an HTTP status (else litellm reports them as its own bugs)."""
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
        # a caller that stopped reading had its request aborted; report it now, leaving the engine idle
        finally:
            while eng.has_unfinished():
                eng.step()


def _run_local_n(name: str, messages: list, optional_params: dict, n: int) -> list[Any]:
    """The final RequestOutputs of `n` samples of one prompt, decoded in one continuous batch. The first
    request runs its prefill alone, so the others find the prompt in the prefix cache and compute only what
    it lacks; request i samples with seed + i (a given seed still gives distinct, reproducible samples)."""
    eng = local_engine(name)
    params, cache_salt = _sampling_params(optional_params)
    ids = eng.apply_chat_template(messages)
    with _engine_locks[name]:
        rids = [eng.add_request(ids, params, cache_salt=cache_salt)]
        try:
            first = eng.requests[rids[0]]
            done = []
            while first.num_output_tokens == 0 and eng.has_unfinished():
                done += [out for out in eng.step() if out.finished]
            for i in range(1, n):
                seed = None if params.seed is None else params.seed + i
                rids.append(eng.add_request(ids, params.model_copy(update={"seed": seed}),
                                            cache_salt=cache_salt))
            if done:  # the first request finished in its prefill step (max_tokens=1)
                return [done[0], *eng.step_until_idle(rids[1:])]
            return eng.step_until_idle(rids)
        finally:
            for rid in rids:
                eng.abort(rid)
            while eng.has_unfinished():
                eng.step()


def _usage_and_metrics(outputs: list[Any]) -> tuple[dict, dict]:
    """The `usage` block (less the reasoning_tokens litellm leaves unset) and `metrics` object the server
    sends, for the choices of one prompt, as the server counts them: the prompt and its cached tokens once,
    every choice's decode tokens, passes and computed prompt tokens summed (the samples after the first
    find its prefill in the prefix cache, all but the last, partial block)."""
    usage, metrics = usage_and_metrics([(0, m) for m in outputs])
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
        n = int(optional_params.get("n") or 1)
        if n > 1:
            try:
                outputs = _run_local_n(model, messages, optional_params, n)
            except ValueError as exc:  # InvalidRequestError, bad sampling parameters
                raise CustomLLMError(400, str(exc)) from exc
        else:
            *_, last = _run_local(model, messages, optional_params)
            outputs = [last]
        for out in outputs:
            _check(out)
        model_response.model = f"{PREFIX}{model}"
        model_response.choices = [Choices(index=i, finish_reason=out.finish_reason,
                                          message=Message(role="assistant", content=out.text))
                                  for i, out in enumerate(outputs)]
        usage, metrics = _usage_and_metrics([out.metrics for out in outputs])
        metrics["choices"] = [{"completion_tokens": out.metrics.completion_tokens,
                               "decode_passes": out.metrics.decode_passes} for out in outputs]
        model_response.usage = Usage(**usage)
        model_response.metrics = metrics
        return model_response

    def streaming(self, model: str, messages: list, api_base: str, custom_prompt_dict: dict,
                  model_response: ModelResponse, print_verbose: Any, encoding: Any, api_key: Any,
                  logging_obj: Any, optional_params: dict, *args: Any, **kwargs: Any) -> Iterator[dict]:
        for out in _run_local(model, messages, optional_params):
            _check(out)
            usage, metrics = _usage_and_metrics([out.metrics])
            # the metrics so far on every chunk: a reader that stops the stream early (harness/early_stop.py)
            # still knows the prompt's cached tokens and the passes decoded; the usage comes at the end
            chunk = {"text": out.new_text or "", "is_finished": out.finished,
                     "finish_reason": out.finish_reason or "", "usage": usage if out.finished else None,
                     "index": 0, "provider_specific_fields": {"metrics": metrics}}
            yield chunk

    # Each async request steps the engine on a thread of its own that ends with it: an executor's threads
    # persist, and each one that stepped would keep an OpenMP pool (engine/passing_thread.py).
    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        return await awaited_on_passing_thread(partial(self.completion, *args, **kwargs))

    def astreaming(self, *args: Any, **kwargs: Any) -> AsyncIterator[dict]:
        return iterated_on_passing_thread(partial(self.streaming, *args, **kwargs))


_local_llm = LocalEngineLLM()


def register_local_provider() -> None:
    """Make `local/<model>` resolvable by litellm (idempotent)."""
    if not any(entry.get("provider") == LOCAL_PROVIDER for entry in litellm.custom_provider_map):
        litellm.custom_provider_map = [*litellm.custom_provider_map,
                                       {"provider": LOCAL_PROVIDER, "custom_handler": _local_llm}]
    litellm.utils.custom_llm_setup()


register_local_provider()
