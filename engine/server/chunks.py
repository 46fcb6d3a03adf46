"""The SSE wire format, and the chunks a streaming chat or text completion sends, shaped as OpenAI's.

With logprobs, a chunk carries those of the tokens that came since the last chunk of its choice (an output
whose text is held back, or read into no delta yet, sends its tokens' logprobs with the next chunk)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from deltaserve.engine.outputs import TokenLogprob
from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.errors import error_body
from deltaserve.engine.server.logprobs import ChatLogprobs, CompletionLogprobs, TokenTexts
from deltaserve.engine.server.openai_protocol import (
    ChatChunkChoice,
    ChatCompletionChunk,
    DeltaMessage,
    ResponseMetrics,
    TextChoice,
    Usage,
)
from deltaserve.errors import APIError

DONE = "data: [DONE]\n\n"


def sse(data: dict) -> str:
    return "data: " + json.dumps(data) + "\n\n"


UsageSoFar = Callable[[], "tuple[Usage, ResponseMetrics] | None"]


class DataChunks:
    """How the chat and text completion streams end: [DONE], after the error envelope where one failed;
    with `usage_so_far` (stream_options.continuous_usage_stats) every chunk carries the usage and metrics
    counted so far."""

    usage_so_far: UsageSoFar | None = None

    def running_usage(self) -> dict[str, Any]:
        """The usage fields of a chunk that is not the last: counts so far, or OpenAI's usage: null."""
        counted = self.usage_so_far() if self.usage_so_far is not None else None
        if counted is not None:
            usage, rm = counted
            return {"usage": usage.model_dump(exclude_none=True), "metrics": rm.model_dump(exclude_none=True)}
        return {"usage": None} if self.include_usage else {}

    def failure(self, err: APIError) -> str:
        return sse(error_body(err))

    def closing(self) -> list[str]:
        return [DONE]


class ChatChunks(DataChunks):
    """The events of one streaming chat completion: a role chunk per choice, each reply's deltas (content,
    tool call pieces: see chat_reply.py), finish chunks; `texts` when the request asked for logprobs."""

    def __init__(self, response_id: str, created: int, model: str, include_usage: bool,
                 replies: list[ChatReply], texts: TokenTexts | None = None,
                 usage_so_far: UsageSoFar | None = None) -> None:
        self.response_id, self.created, self.model = response_id, created, model
        self.include_usage, self.usage_so_far = include_usage, usage_so_far
        self.replies = replies
        self.texts = texts
        self.pending: list[list[TokenLogprob]] = [[] for _ in replies]  # logprobs not sent yet, per choice

    def chunk(self, choices: list[ChatChunkChoice], **extra: Any) -> str:
        c = ChatCompletionChunk(id=self.response_id, created=self.created, model=self.model, choices=choices,
                                **extra)
        data = c.model_dump(exclude_none=True)
        for choice in data["choices"]:
            choice.setdefault("finish_reason", None)
        if "usage" not in data:
            data.update(self.running_usage())  # OpenAI sends usage: null on every chunk but the last
        return sse(data)

    def opening(self, num_choices: int) -> list[str]:
        return [self.chunk([ChatChunkChoice(index=i, delta=DeltaMessage(role="assistant", content=""))])
                for i in range(num_choices)]

    def for_output(self, index: int, out: Any) -> list[str]:
        """The chunks of one engine output; raises an APIError when a finished reply breaks its tool plan."""
        reply = self.replies[index]
        self.pending[index] += out.new_logprobs or ()
        events = [self.chunk([ChatChunkChoice(index=index, delta=delta, logprobs=self._logprobs(index))])
                  for delta in reply.feed(out.new_text or "", final=out.finished)]
        if out.finished:
            reason = reply.finish_reason(out.finish_reason)
            end = ChatChunkChoice(index=index, delta=DeltaMessage(), finish_reason=reason,
                                  logprobs=self._logprobs(index))
            events.append(self.chunk([end]))
        return events

    def _logprobs(self, index: int) -> ChatLogprobs | None:
        """The logprobs of choice `index`'s tokens not sent yet; None when there are none."""
        if self.texts is None or not self.pending[index]:
            return None
        entries, self.pending[index] = self.pending[index], []
        return self.texts.chat(entries)

    def usage(self, usage: Usage, rm: ResponseMetrics) -> str:
        return self.chunk([], usage=usage, metrics=rm)



class TextChunks(DataChunks):
    """The events of one streaming text completion: a chunk per output that has text or finishes a choice;
    `texts` when the request asked for logprobs (their text offsets go on from chunk to chunk)."""

    def __init__(self, response_id: str, created: int, model: str, include_usage: bool, num_choices: int = 1,
                 texts: TokenTexts | None = None, usage_so_far: UsageSoFar | None = None) -> None:
        self.response_id, self.created, self.model = response_id, created, model
        self.include_usage, self.usage_so_far = include_usage, usage_so_far
        self.texts = texts
        self.pending: list[list[TokenLogprob]] = [[] for _ in range(num_choices)]
        self.offsets = [0] * num_choices  # where each choice's next token's text begins

    def chunk(self, choices: list[TextChoice], usage: Usage | None = None,
              rm: ResponseMetrics | None = None) -> str:
        data: dict[str, Any] = {"id": self.response_id, "object": "text_completion", "created": self.created,
                                "model": self.model, "choices": [c.model_dump() for c in choices]}
        if usage is not None:
            data["usage"] = usage.model_dump()
            data["metrics"] = rm.model_dump() if rm else None
        else:
            data.update(self.running_usage())
        return sse(data)

    def opening(self, num_choices: int) -> list[str]:
        return []

    def for_output(self, index: int, out: Any) -> list[str]:
        self.pending[index] += out.new_logprobs or ()
        if not (out.new_text or out.finished):
            return []
        reason = out.finish_reason if out.finished else None
        choice = TextChoice(index=index, text=out.new_text or "", finish_reason=reason,
                            logprobs=self._logprobs(index))
        return [self.chunk([choice])]

    def _logprobs(self, index: int) -> CompletionLogprobs | None:
        if self.texts is None:
            return None
        entries, self.pending[index] = self.pending[index], []
        logprobs = self.texts.completion(entries, self.offsets[index])
        self.offsets[index] += sum(map(len, logprobs.tokens))
        return logprobs

    def usage(self, usage: Usage, rm: ResponseMetrics) -> str:
        return self.chunk([], usage, rm)

