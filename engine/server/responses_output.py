"""What POST /v1/responses answers: the response object and its output items.

One `OutputItems` turns a reply's deltas (chat_reply.py: content pieces, tool call heads and argument pieces)
into the Responses API's items, in both modes: streamed, each change is also an event (responses_events.py);
whole, the items are the response's `output`. So a streamed reply and a whole one give the same items: text
becomes an assistant message item, each call a function_call item, in the order the model wrote them.
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.openai_protocol import DeltaMessage, ResponseMetrics, Usage, now
from deltaserve.engine.server.responses_protocol import ItemStatus, ResponsesRequest

Event = tuple[str, dict[str, Any]]  # (event type, its fields besides type and sequence_number)


def item_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class OutputTextPart(BaseModel):
    type: Literal["output_text"] = "output_text"
    text: str = ""
    annotations: list[dict[str, Any]] = Field(default_factory=list)


class OutputMessage(BaseModel):
    id: str = Field(default_factory=lambda: item_id("msg"))
    type: Literal["message"] = "message"
    status: ItemStatus = "in_progress"
    role: Literal["assistant"] = "assistant"
    content: list[OutputTextPart] = Field(default_factory=list)


class OutputFunctionCall(BaseModel):
    id: str = Field(default_factory=lambda: item_id("fc"))
    type: Literal["function_call"] = "function_call"
    status: ItemStatus = "in_progress"
    call_id: str
    name: str
    arguments: str = ""
    namespace: str | None = None  # the namespace tool the function is in, where it is in one


class InputTokensDetails(BaseModel):
    cached_tokens: int = 0


class OutputTokensDetails(BaseModel):
    reasoning_tokens: int = 0


class ResponseUsage(BaseModel):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int

    @classmethod
    def of(cls, usage: Usage) -> ResponseUsage:
        return cls(input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens,
                   total_tokens=usage.total_tokens, output_tokens_details=OutputTokensDetails(),
                   input_tokens_details=InputTokensDetails(cached_tokens=usage.prompt_tokens_details.cached_tokens))


class ResponseError(BaseModel):
    code: str | None = None
    message: str


class IncompleteDetails(BaseModel):
    reason: Literal["max_output_tokens"]


class ResponseObject(BaseModel):
    """The response, as created (in progress, no output) and as finished; `metrics` is our extension."""

    id: str
    object: Literal["response"] = "response"
    created_at: int
    status: Literal["in_progress", "completed", "incomplete", "failed"] = "in_progress"
    error: ResponseError | None = None
    incomplete_details: IncompleteDetails | None = None
    instructions: str | None = None
    max_output_tokens: int | None = None
    model: str
    output: list[OutputMessage | OutputFunctionCall] = Field(default_factory=list)
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    reasoning: dict[str, Any] = Field(default_factory=lambda: {"effort": None, "summary": None})
    store: bool = True
    temperature: float
    text: dict[str, Any]
    tool_choice: Any = "auto"
    tools: list[dict[str, Any]] = Field(default_factory=list)
    top_p: float
    truncation: Literal["disabled"] = "disabled"
    usage: ResponseUsage | None = None
    user: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)
    metrics: ResponseMetrics | None = None

    @classmethod
    def created(cls, req: ResponsesRequest) -> ResponseObject:
        """The response to `req` as it starts: the request's settings echoed, no output yet."""
        fmt = req.text.format if req.text is not None and req.text.format is not None else None
        choice = req.tool_choice.model_dump() if isinstance(req.tool_choice, BaseModel) else req.tool_choice
        text = fmt.model_dump(by_alias=True, exclude_none=True) if fmt else {"type": "text"}
        tools = req.tools or ()
        return cls(id=item_id("resp"), created_at=now(), instructions=req.instructions,
                   max_output_tokens=req.max_output_tokens, model=req.model,
                   parallel_tool_calls=req.parallel_tool_calls is not False,
                   previous_response_id=req.previous_response_id, store=req.store,
                   temperature=req.temperature, top_p=req.top_p, text={"format": text},
                   tool_choice=choice or "auto", tools=[t.model_dump(exclude_none=True) for t in tools],
                   user=req.user, metadata=req.metadata or {})

    def finished(self, items: OutputItems, usage: Usage, rm: ResponseMetrics) -> ResponseObject:
        incomplete = items.status == "incomplete"
        return self.model_copy(update={
            "status": items.status, "output": items.items, "usage": ResponseUsage.of(usage), "metrics": rm,
            "incomplete_details": IncompleteDetails(reason="max_output_tokens") if incomplete else None})

    def failed(self, items: OutputItems, code: str | None, message: str) -> ResponseObject:
        return self.model_copy(update={"status": "failed", "output": items.items,
                                       "error": ResponseError(code=code, message=message)})


class OutputItems:
    """One reply's output items, built from its deltas; `add` and `finish` return the events of each change.
    Whitespace between calls opens no message; a reply with no item at all ends as one message (its text,
    if any)."""

    def __init__(self, namespaces: dict[str, str] | None = None) -> None:
        self.namespaces = namespaces or {}  # each namespaced function's namespace, by the function's name
        self.items: list[OutputMessage | OutputFunctionCall] = []
        self.status: ItemStatus = "in_progress"
        self.reason: str | None = None  # the reply's finish reason, once finished (ChatReply.finish_reason)
        self._open: OutputMessage | OutputFunctionCall | None = None
        self._calls: dict[int, OutputFunctionCall] = {}  # by the parser's call index
        self._index: dict[str, int] = {}  # each item's place in `items`, by its id
        self._held = ""  # whitespace not yet in any message

    def read(self, reply: ChatReply, text: str, finish_reason: str | None = None) -> list[Event]:
        """The events of the reply's next piece of text; `finish_reason` (the engine's) where it is the last
        (raises an APIError when the finished reply breaks its tool plan: ChatReply.finish_reason)."""
        events = [e for delta in reply.feed(text, final=finish_reason is not None) for e in self.add(delta)]
        if finish_reason is not None:
            events += self.finish(reply.finish_reason(finish_reason))
        return events

    def add(self, delta: DeltaMessage) -> list[Event]:
        events = self._text(delta.content) if delta.content else []
        for piece in delta.tool_calls or ():
            if piece.id is not None:  # a call's head: a new item
                events += self._close()
                name = piece.function.name or ""
                call = OutputFunctionCall(call_id=piece.id, name=name, namespace=self.namespaces.get(name))
                self._calls[piece.index] = call
                events += self._start(call)
            call = self._calls[piece.index]
            if piece.function.arguments:
                call.arguments += piece.function.arguments
                events.append(("response.function_call_arguments.delta",
                               {**self._where(call), "delta": piece.function.arguments}))
        return events

    def finish(self, reason: str) -> list[Event]:
        """The end of the reply, for the reply's finish reason ("length": the last item is incomplete)."""
        events: list[Event] = []
        if not self.items:
            events += self._text(self._held, force=True)
        self.reason = reason
        self.status = "incomplete" if reason == "length" else "completed"
        return events + self._close(self.status)

    # ---- items

    def _text(self, text: str, force: bool = False) -> list[Event]:
        if isinstance(self._open, OutputMessage):
            return self._more_text(self._open, text)
        if not force and not (self._held + text).strip():
            self._held += text
            return []
        text, self._held = self._held + text, ""
        message = OutputMessage()
        events = self._close() + self._start(message)
        message.content.append(OutputTextPart())
        events.append(("response.content_part.added", {**self._where(message), "content_index": 0,
                                                       "part": OutputTextPart().model_dump()}))
        return events + (self._more_text(message, text) if text else [])

    def _more_text(self, message: OutputMessage, text: str) -> list[Event]:
        message.content[0].text += text
        return [("response.output_text.delta", {**self._where(message), "content_index": 0, "delta": text,
                                                "logprobs": []})]

    def _start(self, item: OutputMessage | OutputFunctionCall) -> list[Event]:
        self._index[item.id] = len(self.items)
        self.items.append(item)
        self._open = item
        added = {"output_index": self._index[item.id], "item": item.model_dump()}
        return [("response.output_item.added", added)]

    def _close(self, status: ItemStatus = "completed") -> list[Event]:
        item, self._open = self._open, None
        if item is None:
            return []
        item.status = status
        where = self._where(item)
        if isinstance(item, OutputMessage):
            part = item.content[0]
            at = {**where, "content_index": 0}
            events = [("response.output_text.done", {**at, "text": part.text, "logprobs": []}),
                      ("response.content_part.done", {**at, "part": part.model_dump()})]
        else:
            events = [("response.function_call_arguments.done",
                       {**where, "name": item.name, "arguments": item.arguments})]
        return events + [("response.output_item.done", {"output_index": where["output_index"],
                                                        "item": item.model_dump()})]

    def _where(self, item: OutputMessage | OutputFunctionCall) -> dict[str, Any]:
        return {"item_id": item.id, "output_index": self._index[item.id]}
