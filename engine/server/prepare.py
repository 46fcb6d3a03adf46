"""Turning a request's prompts into engine input, off the engine thread.

A prompt first passes a cheap bound: more characters than the prompt limit's tokens can cover is a 400
before anything tokenizes it. Then it is tokenized on the server's own tokenizer thread, never the engine's,
so however long it takes the running batch keeps stepping; its token count is checked against the prompt
limit and the model's context, and each choice gets its SamplingParams. Every refusal is an
InvalidRequestError (a 400).
"""

from __future__ import annotations

import asyncio
import json
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.sampler import SamplingParams
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.engine.server.openai_protocol import SamplingRequest
from deltaserve.engine.server.structured import format_spec, grammar_spec
from deltaserve.errors import APIError, ContextLengthError, InvalidRequestError

# A token covers at most as many characters of normalized text as its vocabulary entry is long; a normalizer
# can shrink the text it is given (NFC composes up to three code points into one), hence this slack.
NORMALIZER_SLACK = 4


def longest_token_chars(tokenizer: Any) -> int:
    """The longest vocabulary entry, in characters (a byte-level entry has one character per byte)."""
    return max(map(len, tokenizer.get_vocab()), default=1)


@dataclass(frozen=True)
class ChatPrompt:
    """A chat as the template renders it: its messages, the tools (None: none rendered), and the text the
    reply begins with (written for the model after the generation prompt)."""

    messages: list[dict]
    tools: list[dict] | None = None
    prefill: str = ""
    add_generation_prompt: bool = True

    def chars(self) -> int:
        """Characters of everything the template is given (a bound, not the rendered length)."""
        calls = [m["tool_calls"] for m in self.messages if m.get("tool_calls")]
        extra = len(json.dumps(calls)) if calls else 0
        if self.tools:
            extra += len(json.dumps(self.tools))
        return sum(len(m["content"]) for m in self.messages) + extra + len(self.prefill)


def prompt_chars(prompt: Any) -> int | None:
    """Characters of a text prompt or of a chat's contents; None for token ids (counted as they are)."""
    if isinstance(prompt, str):
        return len(prompt)
    if isinstance(prompt, ChatPrompt):
        return prompt.chars()
    return None


def prompt_ids(engine: Any, prompt: Any) -> list[int]:
    """Token ids of a chat (through the chat template, then its prefill), a text, or ids as they are."""
    if isinstance(prompt, ChatPrompt):
        kwargs: dict[str, Any] = {"tools": prompt.tools} if prompt.tools else {}
        if not prompt.add_generation_prompt:
            kwargs["add_generation_prompt"] = False
        ids = list(engine.apply_chat_template(prompt.messages, **kwargs))
        if prompt.prefill:
            ids += engine.tokenizer.encode(prompt.prefill, add_special_tokens=False)
        return ids
    if isinstance(prompt, str):
        return list(engine.tokenize(prompt))
    return list(prompt)


def room_after_prompt(num_prompt: int, max_tokens: int | None, context: int, limits: ServerLimits) -> int:
    """Tokens the context has left after the prompt; raises when the prompt or max_tokens do not fit."""
    cap = limits.max_prompt_tokens or context
    if num_prompt > cap:  # the server's own cap on prompts: to a client, the context it is served with
        raise ContextLengthError(num_prompt, cap)
    room = context - num_prompt
    if room < 1:
        raise ContextLengthError(num_prompt, context)
    if max_tokens is not None and max_tokens > room:
        raise ContextLengthError(num_prompt, context, completion_tokens=max_tokens)
    return room


class PromptPreparer:
    """Bounds, tokenizes and checks prompts for one server; tokenizing runs on one thread of its own (the
    engine's tokenizer is only read there; the engine thread keeps the engine to itself)."""

    def __init__(self, engine: Any, limits: ServerLimits) -> None:
        self.engine, self.limits = engine, limits
        self.context = int(engine.max_model_len)
        self.max_prompt_tokens = min(limits.max_prompt_tokens or self.context, self.context)
        self.token_chars = longest_token_chars(engine.tokenizer) * NORMALIZER_SLACK
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deltaserve-tokenizer")

    def check_prompt_chars(self, chars: int) -> None:
        """Refuse a prompt that more than the prompt cap's tokens would be needed to hold, without tokenizing
        it, as the overflow it is."""
        cap = self.max_prompt_tokens
        if chars > cap * self.token_chars:
            raise ContextLengthError(max(math.floor(chars / self.token_chars), cap + 1), cap, chars=chars)

    def check_chars(self, what: str, chars: int, max_tokens: int) -> None:
        """Refuse text that more than `max_tokens` tokens would be needed to hold, without tokenizing it."""
        if chars > max_tokens * self.token_chars:
            raise InvalidRequestError(
                f"{what} has {chars} characters, more than {max_tokens} tokens can hold; this server accepts "
                f"at most {max_tokens} tokens")

    async def tokenize(self, prompt: Any) -> list[int]:
        """The prompt's token ids, tokenized on this preparer's thread once its length passed the bound."""
        chars = prompt_chars(prompt)
        if chars is None:
            return list(prompt)  # token ids: nothing to tokenize (the engine checks their range)
        self.check_prompt_chars(chars)
        return await self.run(prompt_ids, self.engine, prompt)

    async def run(self, fn: Any, *args: Any) -> Any:
        """`fn(*args)` on the tokenizer thread (anything that reads the tokenizer for a while)."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def prepare(self, prompt: Any, max_tokens: int | None) -> tuple[list[int], int]:
        """The prompt's token ids and the room the context has left after them."""
        ids = await self.tokenize(prompt)
        return ids, room_after_prompt(len(ids), max_tokens, self.context, self.limits)

    def prediction(self, req: SamplingRequest) -> str | None:
        """The predicted output's text; one longer than any reply could be is refused (the drafter tokenizes
        it on the engine thread)."""
        if req.prediction is None:
            return None
        text = req.prediction.text()
        self.check_chars("prediction", len(text), self.context)
        return text

    async def grammar(self, req: SamplingRequest, tool_grammars: tuple[GrammarSpec, ...] = ()
                      ) -> GrammarSpec | None:
        """The grammar the request's output must match, checked here (a bad schema is a 400); the first one
        also builds the engine's tokenizer view for grammars, on this thread rather than the engine's.
        `tool_grammars`: a tool plan's, the first that compiles (grammar_spec refuses a structured output
        beside tools the model may call, so a request never has both)."""
        spec = grammar_spec(req)
        if spec is not None:
            try:
                await self.run(self.engine.grammars.check, spec)
            except InvalidRequestError as exc:
                param = "structured_outputs" if req.structured_outputs is not None else "response_format"
                raise APIError(400, f"{param}: {exc}", param=param, code="invalid_grammar") from exc
            return spec
        first_error = None
        for candidate in tool_grammars:
            try:
                await self.run(self.engine.grammars.check, candidate)
                return candidate
            except InvalidRequestError as exc:
                first_error = first_error or exc
        if first_error is None:
            return None
        fmt = getattr(req, "response_format", None)
        if fmt is not None and fmt.type != "text":  # the answer's schema in the tools' grammar: is it that?
            try:
                await self.run(self.engine.grammars.check, format_spec(fmt))
            except InvalidRequestError as exc:
                raise APIError(400, f"response_format: {exc}", param="response_format",
                               code="invalid_grammar") from exc
        raise APIError(400, f"tools: the calls cannot be decoded under these tools' parameters: "
                            f"{first_error}", param="tools", code="invalid_grammar") from first_error

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def sampling_params(req: SamplingRequest, seed: int | None, room: int, prediction: str | None,
                    limits: ServerLimits, stop: tuple[str, ...] = (),
                    grammar: GrammarSpec | None = None) -> SamplingParams:
    """One choice's SamplingParams; max_tokens defaults to what the server allows, and is never more than the
    context leaves (`room`); `stop` adds the server's own stop strings (a tool plan's) to the request's."""
    try:
        return SamplingParams(
            max_tokens=min(req.max_tokens or limits.max_tokens, room),
            temperature=req.temperature,
            top_k=max(req.top_k, 0),
            top_p=req.top_p,
            seed=seed,
            stop=[*(req.stop or []), *stop],
            ignore_eos=req.ignore_eos,
            prediction=prediction,
            speculative=req.speculative,
            grammar=grammar,
            presence_penalty=req.presence_penalty or 0.0,
            frequency_penalty=req.frequency_penalty or 0.0,
            logprobs=req.top_logprobs_wanted,
        )
    except (ValueError, ValidationError) as exc:
        raise InvalidRequestError(str(exc)) from exc
