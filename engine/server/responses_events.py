"""The events of a streaming response (POST /v1/responses with stream: true), shaped as OpenAI's.

Each is an SSE event named by its type, its data the event's JSON with `type` and a `sequence_number`:
response.created and response.in_progress (the response, no output yet); per output item
response.output_item.added, then response.content_part.added and response.output_text.delta for text or
response.function_call_arguments.delta for a call, then their .done events and response.output_item.done;
last response.completed (response.incomplete when max_output_tokens cut the reply) with the whole response,
its usage and metrics. A failure ends the stream with response.failed. No [DONE] follows: the Responses API
ends with its last event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.openai_protocol import ResponseMetrics, Usage
from deltaserve.engine.server.responses_output import OutputItems, ResponseObject
from deltaserve.errors import APIError


class ResponseEvents:
    """A ChunkWriter (streaming.py) for one response; `on_done` gets the finished response (to store it)."""

    include_usage = True  # the last event carries the usage, always

    def __init__(self, response: ResponseObject, reply: ChatReply, items: OutputItems,
                 on_done: Callable[[ResponseObject], None]) -> None:
        self.response, self.reply, self.items, self.on_done = response, reply, items, on_done
        self.sequence = 0

    def event(self, kind: str, fields: dict[str, Any]) -> str:
        data = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

    def opening(self, num_choices: int) -> list[str]:
        body = {"response": self.response.model_dump()}
        return [self.event("response.created", body), self.event("response.in_progress", body)]

    def for_output(self, index: int, out: Any) -> list[str]:
        """The events of one engine output; raises an APIError when a finished reply breaks its tool plan."""
        changes = self.items.read(self.reply, out.new_text or "", out.finish_reason if out.finished else None)
        return [self.event(kind, fields) for kind, fields in changes]

    def usage(self, usage: Usage, rm: ResponseMetrics) -> str:
        done = self.response.finished(self.items, usage, rm)
        self.on_done(done)
        kind = "response.completed" if done.status == "completed" else "response.incomplete"
        return self.event(kind, {"response": done.model_dump()})

    def failure(self, err: APIError) -> str:
        failed = self.response.failed(self.items, err.code, err.message)
        return self.event("response.failed", {"response": failed.model_dump()})

    def closing(self) -> list[str]:
        return []
