"""The engine requests behind one response: one per (prompt, n) choice, and what the response reads back.

Usage counts each prompt once however many choices answer it; every choice that ends (finished, failed or
aborted) is recorded in the server's metrics with the latency since the request arrived.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from deltaserve.engine.async_engine import RequestStream
from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.server.context import ServingContext
from deltaserve.engine.server.errors import engine_failure
from deltaserve.engine.server.metrics import ServerMetrics
from deltaserve.engine.server.openai_protocol import (
    ChatCompletionRequest,
    ResponseMetrics,
    SamplingRequest,
    Usage,
    usage_and_metrics,
)
from deltaserve.engine.server.prepare import ChatPrompt, sampling_params
from deltaserve.engine.server.tool_use import ToolPlan, tool_plan
from deltaserve.errors import APIError, DeltaserveError, InvalidRequestError


class Choices:
    """The streams of one response's choices in choice order, each with the index of the prompt it answers."""

    def __init__(self, arrived: float) -> None:
        self.arrived = arrived  # time.perf_counter() when the HTTP request came in
        self.prompt_index: list[int] = []
        self.streams: list[RequestStream] = []

    def __len__(self) -> int:
        return len(self.streams)

    def __iter__(self) -> Iterator[RequestStream]:
        return iter(self.streams)

    def add(self, prompt_index: int, stream: RequestStream) -> None:
        self.prompt_index.append(prompt_index)
        self.streams.append(stream)

    def abort(self) -> None:
        """Abort every unfinished choice (a no-op for finished ones); frees their KV blocks."""
        for stream in self.streams:
            stream.abort()

    def usage(self) -> tuple[Usage, ResponseMetrics]:
        per_choice = zip(self.prompt_index, self.streams, strict=True)
        return usage_and_metrics((p, getattr(s.last, "metrics", None)) for p, s in per_choice)

    def usage_so_far(self) -> tuple[Usage, ResponseMetrics] | None:
        """usage() while the choices run; None before any has an output (nothing is counted yet)."""
        if all(s.last is None for s in self.streams):
            return None
        return self.usage()

    def failure(self) -> APIError | None:
        """The first choice the engine finished with an error, as the API error to answer."""
        for stream in self.streams:
            if (err := engine_failure(stream.last)) is not None:
                return err
        return None

    def record(self, metrics: ServerMetrics) -> None:
        e2e = time.perf_counter() - self.arrived
        for stream in self.streams:
            out = stream.last
            reason = out.finish_reason if out is not None and out.finished else "abort"
            metrics.observe_request(getattr(out, "metrics", None), reason, e2e)


async def submit(ctx: ServingContext, req: SamplingRequest, prompts: list[Any], arrived: float,
                 stop: tuple[str, ...] = (), tool_grammars: tuple[GrammarSpec, ...] = (),
                 fill_context: bool = False) -> Choices:
    """One engine request per (prompt, n), once every prompt has been tokenized and checked; on any refusal
    the ones already in are aborted and it re-raises. `stop`: stop strings besides the request's;
    `tool_grammars`: a tool plan's (PromptPreparer.grammar); `fill_context`: a max_tokens the context cannot
    hold is lowered to what it can (the reply stops when the context is full), not refused."""
    choices = Choices(arrived)
    try:
        prediction = ctx.prompts.prediction(req)
        grammar = await ctx.prompts.grammar(req, tool_grammars)
        asked = None if fill_context else req.max_tokens
        prepared = [await ctx.prompts.prepare(prompt, asked) for prompt in prompts]
        for p_index, (ids, room) in enumerate(prepared):
            for i in range(req.n):
                seed = None if req.seed is None else req.seed + i
                params = sampling_params(req, seed, room, prediction, ctx.limits, stop, grammar)
                choices.add(p_index, await ctx.async_engine.add_request(ids, params, req.cache_salt))
    except BaseException as exc:
        choices.abort()
        if isinstance(exc, ValueError) and not isinstance(exc, DeltaserveError):
            raise InvalidRequestError(str(exc)) from exc  # a tokenizer's plain ValueError: a bad request
        raise
    return choices


def chat_prompt(ctx: ServingContext, req: ChatCompletionRequest) -> tuple[ToolPlan, ChatPrompt]:
    """A chat request's tool plan and prompt: its messages through the chat template, with the tools the plan
    puts in the prompt, the reply begun as the plan says."""
    plan = tool_plan(req, ctx.tools_refused, ctx.tool_tags)
    return plan, ChatPrompt([m.for_template() for m in req.messages], plan.tools, plan.prefill)


async def submit_chat(ctx: ServingContext, req: ChatCompletionRequest, arrived: float,
                      fill_context: bool = False) -> tuple[ToolPlan, Choices]:
    """A chat request's tool plan and its choices: its prompt (chat_prompt), the reply decoded under the
    plan's grammar (`fill_context`: as in submit)."""
    plan, prompt = chat_prompt(ctx, req)
    return plan, await submit(ctx, req, [prompt], arrived, plan.stop, plan.grammars, fill_context)
