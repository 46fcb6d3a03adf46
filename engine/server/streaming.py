"""Reading a response's choices as the engine produces them: merged into one sequence of (choice, output),
run to the end for a plain response (aborted when the client leaves), or sent as server-sent events.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from fastapi import Request
from fastapi.responses import StreamingResponse

from deltaserve.engine.async_engine import RequestStream
from deltaserve.engine.outputs import TokenLogprob
from deltaserve.engine.server.choices import Choices
from deltaserve.engine.server.errors import engine_failure, to_api_error
from deltaserve.engine.server.metrics import ServerMetrics
from deltaserve.engine.server.openai_protocol import ResponseMetrics, Usage
from deltaserve.errors import APIError, EngineStepError

DISCONNECT_POLL_S = 0.25  # how often a non-streaming request checks whether its client is still there


class ChunkWriter(Protocol):
    """The SSE events of one kind of streaming response (chunks.py, responses_events.py)."""

    include_usage: bool

    def opening(self, num_choices: int) -> list[str]: ...
    def for_output(self, index: int, out: Any) -> list[str]: ...
    def usage(self, usage: Usage, rm: ResponseMetrics) -> str: ...
    def failure(self, err: APIError) -> str: ...  # the event that ends a failed stream
    def closing(self) -> list[str]: ...  # after the last event ([DONE] where the API has one)


async def _pump(index: int, stream: RequestStream, queue: asyncio.Queue) -> None:
    try:
        async for out in stream:
            queue.put_nowait((index, out, None))
    except Exception as exc:
        queue.put_nowait((index, None, exc))
    queue.put_nowait((index, None, StopAsyncIteration()))


async def merged(choices: Choices) -> AsyncIterator[tuple[int, Any]]:
    """(choice index, output) from all choices as they arrive; re-raises a stream's error."""
    if len(choices) == 1:
        async for out in choices.streams[0]:
            yield 0, out
        return
    queue: asyncio.Queue = asyncio.Queue()
    tasks = [asyncio.create_task(_pump(i, s, queue)) for i, s in enumerate(choices)]
    try:
        remaining = len(tasks)
        while remaining:
            index, out, exc = await queue.get()
            if isinstance(exc, StopAsyncIteration):
                remaining -= 1
            elif exc is not None:
                raise exc
            else:
                yield index, out
    finally:
        for task in tasks:
            task.cancel()


@dataclass
class ChoiceOutput:
    """One choice's whole output: its text and, when the request asked for them, its tokens' logprobs."""

    text: str = ""
    logprobs: list[TokenLogprob] = field(default_factory=list)


async def _append_outputs(choices: Choices, outputs: list[ChoiceOutput]) -> None:
    async for index, out in merged(choices):
        outputs[index].text += out.new_text or ""
        outputs[index].logprobs += out.new_logprobs or ()


async def _collect(request: Request, choices: Choices) -> list[ChoiceOutput]:
    """Run all choices to the end; aborts them if the client goes away."""
    outputs = [ChoiceOutput() for _ in range(len(choices))]
    task = asyncio.create_task(_append_outputs(choices, outputs))
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
            if not task.done() and await request.is_disconnected():
                task.cancel()
                raise APIError(499, "client disconnected", code="client_disconnected")
        task.result()
    finally:
        choices.abort()
    return outputs


async def run_to_end(request: Request, choices: Choices, metrics: ServerMetrics) -> list[ChoiceOutput]:
    """Non-streaming: every choice's whole output, or the engine's failure raised as an error."""
    try:
        outputs = await _collect(request, choices)
    finally:
        choices.record(metrics)
    if (err := choices.failure()) is not None:
        raise err
    return outputs


def _failure(chunks: ChunkWriter, err: APIError, metrics: ServerMetrics) -> str:
    metrics.observe_error(err.status)
    return chunks.failure(err)


async def _events(choices: Choices, chunks: ChunkWriter, metrics: ServerMetrics) -> AsyncIterator[str]:
    try:
        for event in chunks.opening(len(choices)):
            yield event
        async for index, out in merged(choices):
            if (err := engine_failure(out)) is not None:
                yield _failure(chunks, err, metrics)
                break
            for event in chunks.for_output(index, out):
                yield event
        else:
            if chunks.include_usage:
                yield chunks.usage(*choices.usage())
    except (EngineStepError, APIError) as exc:  # a failed step, or a reply that broke its tool plan
        yield _failure(chunks, to_api_error(exc), metrics)
    finally:
        choices.abort()  # no-op for finished requests; frees blocks when the client left early
        choices.record(metrics)
    for event in chunks.closing():
        yield event


def event_stream(choices: Choices, chunks: ChunkWriter, metrics: ServerMetrics) -> StreamingResponse:
    """SSE: the opening events, then each output's events as it arrives, then the usage event (when the client
    asked for usage, or the API always sends it) and the closing ones. An engine failure ends the stream with
    the writer's failure event; a client that leaves aborts every choice (frees their blocks)."""
    return StreamingResponse(_events(choices, chunks, metrics), media_type="text/event-stream")
