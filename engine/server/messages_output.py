"""What POST /v1/messages answers: the message and its content blocks (messages_events.py streams them).

A reply's deltas are read into output items by the Responses API's OutputItems (responses_output.py), which
already tells text from calls in both modes; MessageBlocks renames what it builds: a message item is a text
block, a function_call item a tool_use block (its arguments parsed into `input`), each change an event of
Anthropic's stream. So streamed and whole replies give the same blocks, and the three APIs read a reply one
way. A call the reply was cut in (max_tokens) is left out of a whole message; streamed, its pieces have gone.
As Anthropic's API does, a max_tokens the context cannot hold is no error: the reply stops when the context
is full, with stop_reason model_context_window_exceeded.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Literal

from pydantic import BaseModel

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.openai_protocol import ResponseMetrics, Usage
from deltaserve.engine.server.responses_output import OutputFunctionCall, OutputItems, OutputMessage
from deltaserve.errors import APIError

StopReason = Literal["end_turn", "max_tokens", "stop_sequence", "tool_use", "model_context_window_exceeded"]
Event = tuple[str, dict[str, Any]]  # (event type, its fields besides type)


class TextContent(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ToolUseContent(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]


class MessageUsage(BaseModel):
    """Anthropic's split of the prompt: input_tokens are those prefilled, cache_read_input_tokens those served
    from the prefix cache (nothing is written to a cache on request here, so cache creation is 0)."""

    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @classmethod
    def of(cls, prompt_tokens: int, cached_tokens: int, output_tokens: int) -> MessageUsage:
        return cls(input_tokens=prompt_tokens - cached_tokens, output_tokens=output_tokens,
                   cache_read_input_tokens=cached_tokens)

    @classmethod
    def of_usage(cls, usage: Usage) -> MessageUsage:
        return cls.of(usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens, usage.completion_tokens)


class MessageObject(BaseModel):
    """The message, as it starts (no content) and as finished; `metrics` is our extension."""

    id: str
    type: Literal["message"] = "message"
    role: Literal["assistant"] = "assistant"
    model: str
    content: list[TextContent | ToolUseContent]
    stop_reason: StopReason | None = None
    stop_sequence: str | None = None
    usage: MessageUsage
    metrics: ResponseMetrics | None = None

    @classmethod
    def started(cls, model: str) -> MessageObject:
        return cls(id=f"msg_{uuid.uuid4().hex}", model=model, content=[],
                   usage=MessageUsage(input_tokens=0, output_tokens=0))


def tool_input(call: OutputFunctionCall) -> dict[str, Any]:
    """A call's arguments as the tool_use block's input; a 500 where the model wrote no JSON object."""
    try:
        value = json.loads(call.arguments or "{}")
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise APIError(500, f"the model's call to {call.name!r} has arguments that are no JSON object: "
                            f"{call.arguments[:200]!r}", type="server_error", code="invalid_tool_call")
    return value


class MessageBlocks:
    """One reply's content blocks, read through OutputItems; `read` gives the stream events of each change."""

    def __init__(self, stop_sequences: list[str], max_tokens: int, context: int) -> None:
        self.items = OutputItems()
        self.stop_sequences, self.max_tokens = stop_sequences, max_tokens
        self.context = context  # the model's context, in tokens
        self.stop_reason: StopReason | None = None
        self.stop_sequence: str | None = None

    def read(self, reply: ChatReply, text: str, last: Any = None) -> list[Event]:
        """The events of the reply's next piece of text; `last`: the engine's finished output, where this
        piece is the last."""
        reason = last.finish_reason if last is not None else None
        events = [e for change in self.items.read(reply, text, reason) for e in self._event(*change)]
        if last is not None:
            output = len(last.token_ids)
            self._stopped(self.items.reason, last.stop_string, len(last.prompt_token_ids) + output, output)
        return events

    def _stopped(self, reason: str, stop_string: str | None, tokens: int, output_tokens: int) -> None:
        if reason == "stop" and stop_string is not None and stop_string in self.stop_sequences:
            self.stop_reason, self.stop_sequence = "stop_sequence", stop_string
        elif reason == "length":  # max_tokens, or fewer where the context filled first (fill_context)
            full = tokens >= self.context and output_tokens < self.max_tokens
            self.stop_reason = "model_context_window_exceeded" if full else "max_tokens"
        else:
            self.stop_reason = "tool_use" if reason == "tool_calls" else "end_turn"

    def _event(self, kind: str, fields: dict[str, Any]) -> list[Event]:
        index = fields.get("output_index")
        if kind == "response.output_item.added":
            item = self.items.items[index]
            block = ({"type": "text", "text": ""} if isinstance(item, OutputMessage) else
                     {"type": "tool_use", "id": item.call_id, "name": item.name, "input": {}})
            return [("content_block_start", {"index": index, "content_block": block})]
        if kind == "response.output_text.delta":
            return [("content_block_delta", {"index": index, "delta": {"type": "text_delta",
                                                                        "text": fields["delta"]}})]
        if kind == "response.function_call_arguments.delta":
            return [("content_block_delta", {"index": index, "delta": {"type": "input_json_delta",
                                                                        "partial_json": fields["delta"]}})]
        if kind == "response.output_item.done":
            return [("content_block_stop", {"index": index})]
        return []  # the Responses API's content parts and .done summaries have no counterpart here

    def content(self) -> list[TextContent | ToolUseContent]:
        """The whole message's blocks (after the last read); a call cut by max_tokens is left out."""
        blocks: list[TextContent | ToolUseContent] = []
        for item in self.items.items:
            if isinstance(item, OutputMessage):
                blocks.append(TextContent(text=item.content[0].text))
            elif item.status != "incomplete":
                blocks.append(ToolUseContent(id=item.call_id, name=item.name, input=tool_input(item)))
        return blocks

    def finished(self, message: MessageObject, usage: Usage, rm: ResponseMetrics) -> MessageObject:
        return message.model_copy(update={
            "content": self.content(), "stop_reason": self.stop_reason, "stop_sequence": self.stop_sequence,
            "usage": MessageUsage.of_usage(usage), "metrics": rm})
