"""ChatReply: one chat choice's reply as the client sees it, streamed as deltas or answered as one message.

Without tools the text is the content. With them a ToolCallParser reads it, fed first the text the plan
began the reply with (the model's continuation follows it); the finish reason is "tool_calls" when the
model stopped after making calls, and a finished reply is checked against the plan (ToolPlan.check).
"""

from __future__ import annotations

from deltaserve.engine.server.openai_protocol import AssistantMessage, DeltaMessage
from deltaserve.engine.server.tool_parser import PlainText, ToolCallParser
from deltaserve.engine.server.tool_use import ToolPlan


class ChatReply:
    def __init__(self, plan: ToolPlan) -> None:
        self.plan = plan
        self.parser = ToolCallParser(frozenset(plan.schemas), plan.one_call) if plan.parse else PlainText()
        self._pending = self.parser.feed(plan.prefill) if plan.prefill else []

    def feed(self, text: str, final: bool = False) -> list[DeltaMessage]:
        """The deltas to send for `text`, the next piece of the model's output (`final`: the last)."""
        deltas, self._pending = self._pending + self.parser.feed(text, final), []
        return deltas

    def finish_reason(self, engine_reason: str) -> str:
        """The reason to report for the engine's; raises an APIError when a reply the model ended itself
        breaks the plan (a cut one, "length", is reported as it is)."""
        if engine_reason != "stop":
            return engine_reason
        self.plan.check(self.parser.calls)
        return "tool_calls" if self.parser.calls else "stop"

    def message(self) -> AssistantMessage:
        """The whole reply as one message (after the last feed)."""
        calls, content = self.parser.calls, self.parser.content
        return AssistantMessage(content=content if content or not calls else None, tool_calls=calls or None)
