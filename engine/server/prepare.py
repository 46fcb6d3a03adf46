"""Turning one choice of a request into engine input, on the engine thread (which owns the tokenizer).

The prompt is tokenized there, checked against the server's prompt limit and the model's context, and the
request's sampling fields become SamplingParams; every refusal is an InvalidRequestError (a 400).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from deltaserve.engine.openai_protocol import SamplingRequest
from deltaserve.engine.sampler import SamplingParams
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.errors import InvalidRequestError


def prompt_ids(engine: Any, prompt: Any) -> list[int]:
    """Token ids of chat messages (through the chat template), a text, or ids given as they are."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
        return list(engine.apply_chat_template(prompt))
    if isinstance(prompt, str):
        return list(engine.tokenize(prompt))
    return list(prompt)


def room_after_prompt(num_prompt: int, max_tokens: int | None, context: int, limits: ServerLimits) -> int:
    """Tokens the context has left after the prompt; raises when the prompt or max_tokens do not fit."""
    cap = limits.max_prompt_tokens or context
    if num_prompt > cap:
        raise InvalidRequestError(f"prompt has {num_prompt} tokens; this server accepts at most {cap}")
    room = context - num_prompt
    if room < 1:
        raise InvalidRequestError(f"prompt has {num_prompt} tokens; the model's context is {context} tokens")
    if max_tokens is not None and max_tokens > room:
        raise InvalidRequestError(
            f"prompt ({num_prompt} tokens) + max_tokens ({max_tokens}) exceeds the model's context of "
            f"{context} tokens")
    return room


class PreparedChoice:
    """The engine thread's half of one choice: called with the engine, returns (prompt ids, params)."""

    def __init__(self, req: SamplingRequest, prompt: Any, seed: int | None, limits: ServerLimits) -> None:
        self.req, self.prompt, self.seed, self.limits = req, prompt, seed, limits

    def __call__(self, engine: Any) -> tuple[list[int], SamplingParams]:
        ids = prompt_ids(engine, self.prompt)
        room = room_after_prompt(len(ids), self.req.max_tokens, engine.max_model_len, self.limits)
        return ids, self.sampling_params(room)

    def sampling_params(self, room: int) -> SamplingParams:
        req = self.req
        try:
            return SamplingParams(
                max_tokens=req.max_tokens or min(self.limits.max_tokens, room),
                temperature=req.temperature,
                top_k=max(req.top_k, 0),
                top_p=req.top_p,
                seed=self.seed,
                stop=list(req.stop or []),
                ignore_eos=req.ignore_eos,
                prediction=req.prediction.text() if req.prediction else None,
            )
        except (ValueError, ValidationError) as exc:
            raise InvalidRequestError(str(exc)) from exc
