"""OpenAI's Responses API request (POST /v1/responses), read as the chat request it asks for.

The Responses API is the default of the OpenAI Agents SDK and of Codex: `input` is a list of items (messages,
the model's earlier function calls, their outputs) or one text, `instructions` the system message, tools are
flat (`{"type": "function", "name", "parameters"}`, or a namespace grouping such tools, as Codex groups its
sub-agent tools: the model sees each function by its own name, the namespace's description before its own,
and a call to one names its namespace), a structured output is `text.format`. A request becomes
a ChatCompletionRequest (`ResponsesRequest.chat`), so both APIs share one pipeline: the tool plan and its
grammar, the prompt, the reply parser. As elsewhere, a field this server does not implement is a 400 naming
it, never dropped: hosted tools (web search, file search, ...), image and file inputs, reasoning effort (the
served models do not reason), `truncation: "auto"`, `background`, logprobs. Hints that change nothing here
are taken: `store` (responses are kept in memory for `previous_response_id`), `metadata` (echoed), `user`,
`safety_identifier`, `prompt_cache_key` (the prefix cache needs no key), Codex's `client_metadata`, a
reasoning summary (there is no reasoning to summarize), `include` of items that cannot occur here
(reasoning's encrypted content and the hosted tools' results). The engine's extensions of chat requests
(top_k, seed, cache_salt, speculative, prediction, structured_outputs, ...) are taken too.
"""

from __future__ import annotations

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
    Text,
    ToolDefinition,
    by_type,
)

# what `include` may ask for: nothing of it can occur here (no reasoning, no hosted tools, no image inputs)
VACUOUS_INCLUDES = frozenset({
    "reasoning.encrypted_content", "file_search_call.results", "web_search_call.results",
    "web_search_call.action.sources", "code_interpreter_call.outputs",
    "computer_call_output.output.image_url", "message.input_image.image_url",
})
MAX_METADATA_KEYS = 16

ItemStatus = Literal["in_progress", "completed", "incomplete"]


class InputText(BaseModel):
    model_config = REQUEST
    type: Literal["input_text"]
    text: str


class OutputText(BaseModel):
    """An earlier reply's text, as a response gave it (annotations and logprobs are no input to the model)."""

    model_config = REQUEST
    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[dict[str, Any]] | None = None


class Refusal(BaseModel):
    model_config = REQUEST
    type: Literal["refusal"]
    refusal: str


PART_KINDS = {"input_text": "InputText", "output_text": "OutputText", "refusal": "Refusal"}


ContentPart = Annotated[
    Annotated[InputText, Tag("InputText")] | Annotated[OutputText, Tag("OutputText")]
    | Annotated[Refusal, Tag("Refusal")],
    Discriminator(by_type(PART_KINDS), custom_error_type="unsupported_content",
                  custom_error_message="the served models read text: a content part is input_text, "
                                       "output_text or refusal"),
]


def _as_parts(value: Any) -> Any:
    """A text given as a string: one input_text part."""
    return [{"type": "input_text", "text": value}] if isinstance(value, str) else value


def _part_text(part: InputText | OutputText | Refusal) -> str:
    return part.refusal if isinstance(part, Refusal) else part.text


class MessageItem(BaseModel):
    """A message: `{"role", "content"}` (the type may be left out) or an earlier response's output message."""

    model_config = REQUEST
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: list[ContentPart]  # a string is one input_text part
    id: str | None = None
    status: ItemStatus | None = None

    _text_is_one_part = field_validator("content", mode="before",
                                        json_schema_input_type=str | list[ContentPart])(_as_parts)

    def chat(self) -> ChatMessage:
        return ChatMessage(role=self.role, content="".join(map(_part_text, self.content)))


class FunctionCallItem(BaseModel):
    """A call the model made in an earlier response."""

    model_config = REQUEST
    type: Literal["function_call"]
    call_id: Text
    name: str
    arguments: str
    namespace: str | None = None  # a namespace's function: the model knows it by its own name
    id: str | None = None
    status: ItemStatus | None = None

    def chat(self) -> MessageToolCall:
        called = CalledFunction(name=self.name, arguments=self.arguments)
        return MessageToolCall(id=self.call_id, function=called)


class FunctionCallOutputItem(BaseModel):
    """What a call returned: the text the model reads next."""

    model_config = REQUEST
    type: Literal["function_call_output"]
    call_id: Text
    output: list[InputText]  # a string is one input_text part
    name: str | None = None  # the call's, as its call_id already says
    namespace: str | None = None
    id: str | None = None
    status: ItemStatus | None = None

    _text_is_one_part = field_validator("output", mode="before",
                                        json_schema_input_type=str | list[InputText])(_as_parts)

    def chat(self) -> ChatMessage:
        text = "".join(part.text for part in self.output)
        return ChatMessage(role="tool", tool_call_id=self.call_id, content=text)


ITEM_KINDS = {"message": "MessageItem", "function_call": "FunctionCallItem",
              "function_call_output": "FunctionCallOutputItem"}
InputItem = Annotated[
    Annotated[MessageItem, Tag("MessageItem")] | Annotated[FunctionCallItem, Tag("FunctionCallItem")]
    | Annotated[FunctionCallOutputItem, Tag("FunctionCallOutputItem")],
    Discriminator(by_type(ITEM_KINDS, default="message"), custom_error_type="unsupported_item",
                  custom_error_message="an input item is a message, a function_call or a "
                                       "function_call_output (reasoning, item references and hosted tools' "
                                       "items are not served)"),
]


def chat_messages(items: list[MessageItem | FunctionCallItem | FunctionCallOutputItem]) -> list[ChatMessage]:
    """The items as chat messages: function calls join the assistant message just before them (or one of
    their own), each output is a tool message."""
    messages: list[ChatMessage] = []
    for item in items:
        if isinstance(item, FunctionCallItem):
            last = messages[-1] if messages else None
            if last is None or last.role != "assistant":
                last = ChatMessage(role="assistant", tool_calls=[])
                messages.append(last)
            last.tool_calls = [*(last.tool_calls or ()), item.chat()]
        else:
            messages.append(item.chat())
    return messages


def _function_type(value: str) -> str:
    if value != "function":
        raise ValueError(f"only function tools (and namespaces of them) are served here, not {value!r}: "
                         "OpenAI's hosted tools run on OpenAI's servers (Codex leaves web_search out with "
                         "`web_search = \"disabled\"` in its config.toml)")
    return value


class FunctionTool(BaseModel):
    model_config = REQUEST
    type: str
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str | None = None
    parameters: dict[str, Any] | None = None  # a JSON Schema object
    strict: bool | None = None  # as in chat: a call's arguments are checked against `parameters`

    _a_function = field_validator("type")(_function_type)

    def chat(self, namespace: NamespaceTool | None = None) -> ToolDefinition:
        about = [namespace.description, self.description] if namespace else [self.description]
        return ToolDefinition(type="function", function=FunctionDefinition(
            name=self.name, description="\n\n".join(filter(None, about)) or None, parameters=self.parameters,
            strict=self.strict))


class NamespaceTool(BaseModel):
    """Function tools grouped under a name: the model sees each by its own name (so names are distinct
    across namespaces here), the namespace's description before the function's."""

    model_config = REQUEST
    type: Literal["namespace"]
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str | None = None
    tools: Annotated[list[FunctionTool], Field(min_length=1)]


class OtherTool(BaseModel):
    """A tool of any other type (OpenAI's hosted ones: web search, file search, ...): refused by its type,
    whatever its other fields."""

    model_config = ConfigDict(extra="allow")
    type: str

    _a_function = field_validator("type")(_function_type)


_served_tool = by_type({"function": "FunctionTool", "namespace": "NamespaceTool"})
ToolSpec = Annotated[
    Annotated[FunctionTool, Tag("FunctionTool")] | Annotated[NamespaceTool, Tag("NamespaceTool")]
    | Annotated[OtherTool, Tag("OtherTool")],
    Discriminator(lambda value: _served_tool(value) or "OtherTool"),
]


class FunctionToolChoice(BaseModel):
    model_config = REQUEST
    type: Literal["function"]
    name: str


class TextFormat(BaseModel):
    """`text.format`: text, json_object, or json_schema with the schema's fields beside the type."""

    model_config = REQUEST
    type: Literal["text", "json_object", "json_schema"]
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] | None = None
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None

    @model_validator(mode="after")
    def _schema_with_its_type(self) -> TextFormat:
        if self.type == "json_schema" and self.name is None:
            raise ValueError("a json_schema format needs its name")
        if self.type != "json_schema" and (self.name is not None or self.schema_ is not None):
            raise ValueError(f"a {self.type} format takes no name or schema")
        return self

    def chat(self) -> ResponseFormat:
        if self.type != "json_schema":
            return ResponseFormat(type=self.type)
        return ResponseFormat(type="json_schema", json_schema=JsonSchemaFormat(
            name=self.name, description=self.description, schema=self.schema_, strict=self.strict))


class TextConfig(BaseModel):
    model_config = REQUEST
    format: TextFormat | None = None
    verbosity: Literal["medium"] | None = None  # the API's default; low and high ask what no template renders


class Reasoning(BaseModel):
    """The served models do not reason: only no effort (or none) is served; a summary of the reasoning (what
    Codex asks for) is taken, with none to give."""

    model_config = REQUEST
    effort: Literal["none"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None


class ResponsesStreamOptions(BaseModel):
    model_config = REQUEST
    include_obfuscation: bool = True  # padding against length side channels; a local server sends none


class ResponsesRequest(Decoding):
    model: str
    input: Annotated[list[InputItem], Field(min_length=1)]  # a string is one user message
    instructions: str | None = None
    previous_response_id: str | None = None
    tools: list[ToolSpec] | None = None  # an OtherTool never validates
    tool_choice: Literal["none", "auto", "required"] | FunctionToolChoice | None = None
    parallel_tool_calls: bool | None = None
    text: TextConfig | None = None
    max_output_tokens: Int | None = Field(default=None, ge=1)
    stream: bool = False
    stream_options: ResponsesStreamOptions | None = None
    store: bool = True
    metadata: dict[str, str] | None = None
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    client_metadata: dict[str, str] | None = None  # Codex's session ids, for its own backend
    include: list[str] | None = None
    reasoning: Reasoning | None = None
    truncation: Literal["disabled"] | None = None
    background: Literal[False] | None = None

    @field_validator("input", mode="before", json_schema_input_type=str | list[InputItem])
    @classmethod
    def _text_is_a_user_message(cls, value: Any) -> Any:
        if isinstance(value, str):
            if not value:
                raise ValueError("input is empty")
            return [{"role": "user", "content": value}]
        if not isinstance(value, list):
            raise ValueError("input is a string or a list of items")
        return value

    @field_validator("tools")
    @classmethod
    def _distinct_tool_names(cls, tools: list[FunctionTool | NamespaceTool] | None) -> Any:
        names = [f.name for f, _ in functions(tools)]
        if len(set(names)) < len(names):
            raise ValueError("tool names must be distinct (a namespace's functions included: the model knows "
                             "each by its own name)")
        return tools

    def namespaces(self) -> dict[str, str]:
        """The namespace of each function tool that has one, by the function's name."""
        return {f.name: ns.name for f, ns in functions(self.tools) if ns is not None}

    @field_validator("include")
    @classmethod
    def _includable(cls, include: list[str] | None) -> list[str] | None:
        for value in include or ():
            if value == "message.output_text.logprobs":
                raise ValueError("logprobs are not served on /v1/responses (ask /v1/chat/completions)")
            if value not in VACUOUS_INCLUDES:
                raise ValueError(f"{value!r} is not something a response can include")
        return include

    @field_validator("metadata")
    @classmethod
    def _few_keys(cls, metadata: dict[str, str] | None) -> dict[str, str] | None:
        if metadata is not None and len(metadata) > MAX_METADATA_KEYS:
            raise ValueError(f"metadata holds at most {MAX_METADATA_KEYS} keys")
        return metadata

    def messages(self) -> list[ChatMessage]:
        """This request's input as chat messages (the instructions are not among them)."""
        return chat_messages(self.input)

    def chat(self, history: list[ChatMessage]) -> ChatCompletionRequest:
        """The chat request this one asks for, after `history` (the conversation of previous_response_id)."""
        system = [ChatMessage(role="system", content=self.instructions)] if self.instructions else []
        choice = self.tool_choice
        if isinstance(choice, FunctionToolChoice):
            choice = NamedToolChoice(type="function", function=FunctionName(name=choice.name))
        fmt = self.text.format if self.text is not None else None
        decoding = {name: getattr(self, name) for name in Decoding.model_fields}
        return ChatCompletionRequest(
            model=self.model, messages=[*system, *history, *self.messages()],
            max_tokens=self.max_output_tokens,
            tools=[f.chat(ns) for f, ns in functions(self.tools)] or None, tool_choice=choice,
            parallel_tool_calls=self.parallel_tool_calls, response_format=fmt.chat() if fmt else None,
            stream=self.stream, user=self.user, **decoding)


InNamespace = tuple[FunctionTool, NamespaceTool | None]


def functions(tools: list[FunctionTool | NamespaceTool] | None) -> list[InNamespace]:
    """Every function tool, with the namespace it is in (None: at the top level)."""
    found: list[InNamespace] = []
    for tool in tools or ():
        if isinstance(tool, NamespaceTool):
            found += [(f, tool) for f in tool.tools]
        else:
            found.append((tool, None))
    return found
