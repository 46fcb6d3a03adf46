"""The events of a streamed message (POST /v1/messages with stream: true), shaped as Anthropic's: named SSE
events, each one's data its JSON with the `type`; no [DONE] follows (the stream ends with message_stop)."""

from __future__ import annotations

import json
from typing import Any

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.errors import anthropic_error_body
from deltaserve.engine.server.messages_output import MessageBlocks, MessageObject, MessageUsage
from deltaserve.engine.server.openai_protocol import ResponseMetrics, Usage
from deltaserve.errors import APIError


class MessageEvents:
    """A ChunkWriter (streaming.py) for one streamed message, as Anthropic's events: message_start (once the
    engine has run the prompt, so its usage tells cached tokens from prefilled ones) and a ping, each content
    block's start, deltas and stop, then message_delta (stop reason, usage, metrics) and message_stop. A
    failure ends the stream with an error event in Anthropic's shape."""

    include_usage = True  # message_delta carries the usage, always

    def __init__(self, message: MessageObject, reply: ChatReply, blocks: MessageBlocks) -> None:
        self.message, self.reply, self.blocks = message, reply, blocks
        self.started = False

    @staticmethod
    def event(kind: str, fields: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"

    def opening(self, num_choices: int) -> list[str]:
        return []

    def for_output(self, index: int, out: Any) -> list[str]:
        """The events of one engine output; raises an APIError when a finished reply breaks its tool plan."""
        events = []
        if not self.started:
            self.started = True
            m = out.metrics
            usage = MessageUsage.of(m.prompt_tokens, m.cached_tokens, 0)
            start = self.message.model_copy(update={"usage": usage}).model_dump(exclude={"metrics"})
            events += [self.event("message_start", {"message": start}), self.event("ping", {})]
        changes = self.blocks.read(self.reply, out.new_text or "", out if out.finished else None)
        return events + [self.event(kind, fields) for kind, fields in changes]

    def usage(self, usage: Usage, rm: ResponseMetrics) -> str:
        delta = {"stop_reason": self.blocks.stop_reason, "stop_sequence": self.blocks.stop_sequence}
        counts = MessageUsage.of_usage(usage).model_dump()
        end = self.event("message_delta", {"delta": delta, "usage": counts, "metrics": rm.model_dump()})
        return end + self.event("message_stop", {})

    def failure(self, err: APIError) -> str:
        return self.event("error", anthropic_error_body(err))

    def closing(self) -> list[str]:
        return []
