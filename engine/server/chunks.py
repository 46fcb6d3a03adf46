"""The SSE wire format, and the chunks a streaming chat or text completion sends, shaped as OpenAI's."""

from __future__ import annotations

import json
from typing import Any

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.openai_protocol import (
    ChatChunkChoice,
    ChatCompletionChunk,
    DeltaMessage,
    ResponseMetrics,
    TextChoice,
    Usage,
)

DONE = "data: [DONE]\n\n"


def sse(data: dict) -> str:
    return "data: " + json.dumps(data) + "\n\n"


class ChatChunks:
    """The events of one streaming chat completion: a role chunk per choice, each reply's deltas (content,
    tool call pieces: see chat_reply.py), finish chunks."""

    def __init__(self, response_id: str, created: int, model: str, include_usage: bool,
                 replies: list[ChatReply]) -> None:
        self.response_id, self.created, self.model = response_id, created, model
        self.include_usage = include_usage
        self.replies = replies

    def chunk(self, choices: list[ChatChunkChoice], **extra: Any) -> str:
        c = ChatCompletionChunk(id=self.response_id, created=self.created, model=self.model, choices=choices,
                                **extra)
        data = c.model_dump(exclude_none=True)
        for choice in data["choices"]:
            choice.setdefault("finish_reason", None)
        if self.include_usage and "usage" not in data:
            data["usage"] = None  # OpenAI sends usage: null on every chunk but the last
        return sse(data)

    def opening(self, num_choices: int) -> list[str]:
        return [self.chunk([ChatChunkChoice(index=i, delta=DeltaMessage(role="assistant", content=""))])
                for i in range(num_choices)]

    def for_output(self, index: int, out: Any) -> list[str]:
        """The chunks of one engine output; raises an APIError when a finished reply breaks its tool plan."""
        reply = self.replies[index]
        events = [self.chunk([ChatChunkChoice(index=index, delta=delta)])
                  for delta in reply.feed(out.new_text or "", final=out.finished)]
        if out.finished:
            reason = reply.finish_reason(out.finish_reason)
            end = ChatChunkChoice(index=index, delta=DeltaMessage(), finish_reason=reason)
            events.append(self.chunk([end]))
        return events

    def usage(self, usage: Usage, rm: ResponseMetrics) -> str:
        return self.chunk([], usage=usage, metrics=rm)


class TextChunks:
    """The events of one streaming text completion: a chunk per output that has text or finishes a choice."""

    def __init__(self, response_id: str, created: int, model: str, include_usage: bool) -> None:
        self.response_id, self.created, self.model = response_id, created, model
        self.include_usage = include_usage

    def chunk(self, choices: list[TextChoice], usage: Usage | None = None,
              rm: ResponseMetrics | None = None) -> str:
        data: dict[str, Any] = {"id": self.response_id, "object": "text_completion", "created": self.created,
                                "model": self.model, "choices": [c.model_dump() for c in choices]}
        if usage is not None:
            data["usage"] = usage.model_dump()
            data["metrics"] = rm.model_dump() if rm else None
        elif self.include_usage:
            data["usage"] = None
        return sse(data)

    def opening(self, num_choices: int) -> list[str]:
        return []

    def for_output(self, index: int, out: Any) -> list[str]:
        if not (out.new_text or out.finished):
            return []
        reason = out.finish_reason if out.finished else None
        return [self.chunk([TextChoice(index=index, text=out.new_text or "", finish_reason=reason)])]

    def usage(self, usage: Usage, rm: ResponseMetrics) -> str:
        return self.chunk([], usage, rm)
