"""Anthropic's Messages API request (POST /v1/messages, count_tokens), read as the chat request it asks for.

The Messages API is what Claude Code and Anthropic's SDKs speak: `system` beside the messages, a message's
content one text or a list of blocks (text; tool_use in the assistant's turns, tool_result in the user's),
tools as `{name, description, input_schema}`, tool_choice auto / any / tool / none, `max_tokens` required. A
request becomes a ChatCompletionRequest (MessagesInput.chat), so every API shares one pipeline: the tool plan
and its grammar, the prompt, the reply parser. As elsewhere, what this server does not implement is a 400
naming it, never dropped: image and document blocks, thinking (blocks and extended thinking: the served
models do not think), server tools (web search, code execution, ...: they run on Anthropic's side), MCP
servers, containers, clearing tool uses (context_management), and a last message from the assistant (a
prefill for the model to continue). Tool search as a client runs it (Claude Code's ToolSearch) is served: a
`defer_loading` tool stays out of the prompt until a tool_result's `tool_reference` block names it, and
from then on it is one of the prompt's tools (which changes the prompt's head once: that turn is prefilled
anew, later ones read it from the prefix cache). Hints that
change nothing here are taken: cache_control anywhere (the prefix cache reuses every prompt prefix without
marks), metadata.user_id, service_tier, output_config.effort, adaptive thinking and clearing thinking
(the served models write none). Sampling (temperature, top_p, top_k) and the engine's extensions of chat
requests (seed, cache_salt, speculative, prediction, ...) are taken too. A tool_result with is_error reaches
the model as its text after "Error: " (chat templates have no such flag).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from deltaserve.engine.server.openai_protocol import (
    REQUEST,
    CalledFunction,
    ChatCompletionRequest,
    ChatMessage,
    Decoding,
    FunctionDefinition,
    FunctionName,
    Int,
    JsonSchemaFormat,
    MessageToolCall,
    NamedToolChoice,
    ResponseFormat,
    ToolDefinition,
    by_type,
)

MAX_STOP_SEQUENCES = 64  # the engine checks each one at every token; Anthropic documents no limit


class CacheControl(BaseModel):
    """A prompt-caching breakpoint: taken and not needed (the prefix cache reuses any prefix it holds)."""

    model_config = REQUEST
    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class TextBlock(BaseModel):
    model_config = REQUEST
    type: Literal["text"]
    text: str
    cache_control: CacheControl | None = None
    citations: list[dict[str, Any]] | None = None  # an earlier reply's citations: no input to the model


class ToolUseBlock(BaseModel):
    """A call the model made in an earlier turn."""

    model_config = REQUEST
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]
    cache_control: CacheControl | None = None

    def chat(self) -> MessageToolCall:
        called = CalledFunction(name=self.name, arguments=json.dumps(self.input))
        return MessageToolCall(id=self.id, function=called)


def _text(blocks: Any) -> str:
    return "".join(block.text for block in blocks)


def _as_text_blocks(value: Any) -> Any:
    """A text given as a string: one text block."""
    return [{"type": "text", "text": value}] if isinstance(value, str) else value


TextOrBlocks = str | list[TextBlock]


class ToolReferenceBlock(BaseModel):
    """A tool search's result: the deferred tool it names joins the prompt's tools."""

    model_config = REQUEST
    type: Literal["tool_reference"]
    tool_name: str
    cache_control: CacheControl | None = None


ResultBlock = Annotated[
    Annotated[TextBlock, Tag("TextBlock")] | Annotated[ToolReferenceBlock, Tag("ToolReferenceBlock")],
    Discriminator(by_type({"text": "TextBlock", "tool_reference": "ToolReferenceBlock"}),
                  custom_error_type="unsupported_content",
                  custom_error_message="a tool_result holds text and tool_reference blocks (images and "
                                       "documents are not served)"),
]


class ToolResultBlock(BaseModel):
    """What a call returned: the text the model reads next."""

    model_config = REQUEST
    type: Literal["tool_result"]
    tool_use_id: str
    content: list[ResultBlock] = Field(default_factory=list)  # a string is one text block
    is_error: bool | None = None
    cache_control: CacheControl | None = None

    _text_is_one_block = field_validator("content", mode="before", json_schema_input_type=TextOrBlocks)(
        _as_text_blocks)

    def references(self) -> list[str]:
        return [block.tool_name for block in self.content if isinstance(block, ToolReferenceBlock)]

    def chat(self) -> ChatMessage:
        """Its text, then a line naming each tool it loaded."""
        text = _text(block for block in self.content if isinstance(block, TextBlock))
        text = "\n".join([text] * bool(text) + [f"Tool loaded: {name}" for name in self.references()])
        return ChatMessage(role="tool", tool_call_id=self.tool_use_id,
                           content=f"Error: {text}" if self.is_error else text)


BLOCK_KINDS = {"text": "TextBlock", "tool_use": "ToolUseBlock", "tool_result": "ToolResultBlock"}


ContentBlock = Annotated[
    Annotated[TextBlock, Tag("TextBlock")] | Annotated[ToolUseBlock, Tag("ToolUseBlock")]
    | Annotated[ToolResultBlock, Tag("ToolResultBlock")],
    Discriminator(by_type(BLOCK_KINDS), custom_error_type="unsupported_content",
                  custom_error_message="the served models read text: a content block is text, tool_use or "
                                       "tool_result (images, documents and thinking are not served)"),
]


TextOrContent = str | list[ContentBlock]
# the blocks each role's messages may hold besides text
ROLE_BLOCKS = {"user": ToolResultBlock, "assistant": ToolUseBlock, "system": None}


class Message(BaseModel):
    """A turn; "system" is a system message in the conversation (as Claude Code sends its reminders)."""

    model_config = REQUEST
    role: Literal["user", "assistant", "system"]
    content: list[ContentBlock]  # a string is one text block

    _text_is_one_block = field_validator("content", mode="before", json_schema_input_type=TextOrContent)(
        _as_text_blocks)

    @model_validator(mode="after")
    def _blocks_fit_the_role(self) -> Message:
        allowed = ROLE_BLOCKS[self.role]
        kinds = (TextBlock,) if allowed is None else (TextBlock, allowed)
        wrong = next((b for b in self.content if not isinstance(b, kinds)), None)
        if wrong is not None:
            raise ValueError(f"a {self.role} message holds no {wrong.type} block (tool_use blocks are the "
                             "assistant's, tool_result blocks the user's)")
        return self

    def chat(self) -> list[ChatMessage]:
        """This message as chat messages: an assistant turn with its calls, a system message, or a user
        turn's tool results (one tool message each) followed by its text."""
        text = _text(block for block in self.content if isinstance(block, TextBlock))
        if self.role == "system":
            return [ChatMessage(role="system", content=text)]
        if self.role == "assistant":
            calls = [block.chat() for block in self.content if isinstance(block, ToolUseBlock)]
            return [ChatMessage(role="assistant", content=text if text or not calls else None,
                                tool_calls=calls or None)]
        results = [block.chat() for block in self.content if isinstance(block, ToolResultBlock)]
        return [*results, *([ChatMessage(role="user", content=text)] if text or not results else [])]


class Tool(BaseModel):
    """A tool the client runs (Anthropic's "custom" tools)."""

    model_config = REQUEST
    type: Literal["custom"] | None = None
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str | None = None
    input_schema: dict[str, Any]  # a JSON Schema object
    strict: bool | None = None  # as in chat: a call's input is checked against input_schema
    cache_control: CacheControl | None = None
    # not in the prompt until a tool_reference block (a tool search's result) names it
    defer_loading: bool | None = None

    def chat(self) -> ToolDefinition:
        return ToolDefinition(type="function", function=FunctionDefinition(
            name=self.name, description=self.description, parameters=self.input_schema, strict=self.strict))


ToolSpec = Annotated[
    Annotated[Tool, Tag("Tool")],
    Discriminator(by_type({"custom": "Tool"}, default="custom"), custom_error_type="unsupported_tool",
                  custom_error_message="only custom tools (name, description, input_schema) are served "
                                       "here; server tools (web search, code execution, ...) run on "
                                       "Anthropic's side"),
]


class ToolChoice(BaseModel):
    model_config = REQUEST
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None

    @model_validator(mode="after")
    def _name_with_tool(self) -> ToolChoice:
        if (self.name is not None) != (self.type == "tool"):
            raise ValueError("a tool choice names its tool when its type is tool, and only then")
        return self

    def chat(self) -> Literal["none", "auto", "required"] | NamedToolChoice:
        if self.type == "tool":
            return NamedToolChoice(type="function", function=FunctionName(name=self.name))
        return {"any": "required"}.get(self.type, self.type)


class Thinking(BaseModel):
    """The served models do not think: thinking disabled, or adaptive (the model thinks as it sees fit, here
    never), is served; thinking enabled with a budget is not."""

    model_config = REQUEST
    type: str
    budget_tokens: Int | None = None
    display: str | None = None

    @field_validator("type")
    @classmethod
    def _never_thinks(cls, value: str) -> str:
        if value not in ("disabled", "adaptive"):
            raise ValueError(f"the served models do not think: thinking {value!r} is not served (send "
                             "disabled or adaptive, or no thinking)")
        return value


class ContextEdit(BaseModel):
    """A context-management edit: clearing thinking blocks is served (there are none); clearing tool uses
    would change the prompt, and is not."""

    model_config = ConfigDict(extra="allow")  # each edit type's own settings
    type: str

    @field_validator("type")
    @classmethod
    def _clears_thinking(cls, value: str) -> str:
        if not value.startswith("clear_thinking_"):
            raise ValueError(f"context edit {value!r} is not served (only clearing thinking, which the "
                             "served models do not write)")
        return value


class ContextManagement(BaseModel):
    model_config = REQUEST
    edits: list[ContextEdit] = Field(default_factory=list)


class OutputFormat(BaseModel):
    model_config = REQUEST
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(BaseModel):
    """`format`: the reply is JSON decoded to match the schema. `effort` is taken and changes nothing: the
    served models have one effort (no thinking to spend more or less on); Claude Code sends it always."""

    model_config = REQUEST
    format: OutputFormat | None = None
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None

    def response_format(self) -> ResponseFormat | None:
        if self.format is None:
            return None
        return ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(
            name="output", schema=self.format.schema_, strict=True))


class Metadata(BaseModel):
    model_config = REQUEST
    user_id: str | None = None


class MessagesInput(BaseModel):
    """What a prompt is made of: the fields count_tokens takes, and the base of a message request."""

    model_config = REQUEST
    model: str
    messages: Annotated[list[Message], Field(min_length=1)]
    system: list[TextBlock] | None = None  # a string is one text block
    tools: list[ToolSpec] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    output_config: OutputConfig | None = None
    context_management: ContextManagement | None = None
    cache_control: CacheControl | None = None  # automatic caching: what the prefix cache does anyway

    _text_is_one_block = field_validator("system", mode="before", json_schema_input_type=TextOrBlocks | None)(
        _as_text_blocks)

    @field_validator("messages")
    @classmethod
    def _no_prefill(cls, messages: list[Message]) -> list[Message]:
        if messages[-1].role == "assistant":
            raise ValueError("a last assistant message (a prefill for the model to continue) is not served")
        return messages

    @field_validator("tools")
    @classmethod
    def _distinct_tool_names(cls, tools: list[Tool] | None) -> list[Tool] | None:
        names = [t.name for t in tools or ()]
        if len(set(names)) < len(names):
            raise ValueError("tool names must be distinct")
        return tools

    @model_validator(mode="after")
    def _references_name_tools(self) -> MessagesInput:
        unknown = sorted(set(self.tool_references()) - {t.name for t in self.tools or ()})
        if unknown:
            raise ValueError(f"a tool_reference names {', '.join(map(repr, unknown))}, which is not among "
                             "this request's tools")
        return self

    def tool_references(self) -> list[str]:
        """The tools tool_result blocks have loaded so far."""
        return [name for message in self.messages for block in message.content
                if isinstance(block, ToolResultBlock) for name in block.references()]

    def prompt_tools(self) -> list[Tool]:
        """The tools the model sees: all but the deferred ones no tool_reference has loaded yet."""
        loaded = set(self.tool_references())
        return [t for t in self.tools or () if not t.defer_loading or t.name in loaded]

    def chat_messages(self) -> list[ChatMessage]:
        system = _text(self.system or ())
        head = [ChatMessage(role="system", content=system)] if system else []
        return head + [m for message in self.messages for m in message.chat()]

    def chat(self, **fields: Any) -> ChatCompletionRequest:
        """The chat request this one asks for (`fields`: the sampling a message request adds)."""
        choice = self.tool_choice
        fmt = self.output_config.response_format() if self.output_config else None
        return ChatCompletionRequest(
            model=self.model, messages=self.chat_messages(),
            tools=[t.chat() for t in self.prompt_tools()] or None,
            tool_choice=choice.chat() if choice else None,
            parallel_tool_calls=False if choice and choice.disable_parallel_tool_use else None,
            response_format=fmt, **fields)


class MessagesRequest(MessagesInput, Decoding):
    max_tokens: Int = Field(ge=1)
    stop_sequences: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list,
                                                                       max_length=MAX_STOP_SEQUENCES)
    stream: bool = False
    metadata: Metadata | None = None
    service_tier: Literal["auto", "standard_only"] | None = None

    def chat(self) -> ChatCompletionRequest:
        decoding = {name: getattr(self, name) for name in Decoding.model_fields}
        user = self.metadata.user_id if self.metadata else None
        req = super().chat(max_tokens=self.max_tokens, stream=self.stream, user=user, **decoding)
        req.stop = list(self.stop_sequences)  # any number of them (chat's own field takes OpenAI's 4)
        return req
