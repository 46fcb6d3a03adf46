"""OpenAI wire format: request and response models for the server (pydantic validates, we never hand-parse).

Requests refuse what they do not implement: an unknown field is a 400 naming it (a silently dropped field,
`tools` once among them, made agents misbehave without an error). Presence/frequency penalties are served
(-2..2, as OpenAI's), and logprobs (chat: `logprobs` + `top_logprobs` 0..20; completions: `logprobs` 0..5;
shapes in logprobs.py); `response_format` json_object and json_schema by constrained decoding
(engine/constraints), as is the `structured_outputs` extension. They are strict about types, as OpenAI's is:
"yes" is no boolean, true is no token id, "5" is no number (an integer is a valid number, and 3.0 a valid
integer, as in JSON Schema). Tools: function tools, `tool_choice` (none, auto, required, a named function),
`parallel_tool_calls`; history messages may carry `tool_calls` (assistant) and `tool_call_id` (tool).
Extensions over OpenAI: `top_k`, `ignore_eos`, `cache_salt`, `speculative` (the draft method: "ngram",
"suffix" or "off"; absent: the server's) and `structured_outputs` (vLLM's: json, regex, grammar, choice;
ours: edits) on requests; a `metrics` object on responses (with draft counts by drafter).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from deltaserve.engine.config import SpeculativeMethod
from deltaserve.engine.outputs import DraftCounts, add_drafts
from deltaserve.engine.sampler import MAX_TOP_LOGPROBS
from deltaserve.engine.server.logprobs import ChatLogprobs, CompletionLogprobs


def random_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def now() -> int:
    return int(time.time())


# ---------------------------------------------------------------- requests

REQUEST = ConfigDict(extra="forbid", strict=True)


def by_type(kinds: dict[str, str], default: str | None = None) -> Callable[[Any], str | None]:
    """A union's discriminator: the member (its tag) for a value's `type`, `default` where it has none; None
    (the union's own error) for a type not in `kinds`."""
    def kind(value: Any) -> str | None:
        found = value.get("type", default) if isinstance(value, dict) else getattr(value, "type", None)
        return kinds.get(found) if isinstance(found, str) else None
    return kind
INT64 = 2**63
MAX_COMPLETION_LOGPROBS = 5


def _whole_number(value: Any) -> Any:
    """JSON has one number type: 3.0 is the integer 3, as JSON Schema says; 3.5, "3" and true are not."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_whole_number)]
TokenId = Annotated[Int, Field(ge=0)]
Text = Annotated[str, Field(min_length=1)]
TokenIds = Annotated[list[TokenId], Field(min_length=1)]


class StreamOptions(BaseModel):
    model_config = REQUEST
    include_usage: bool = False
    # vLLM's and SGLang's extension: usage (and our metrics) so far on every chunk, so a client that closes
    # the stream early still knows what the reply cost; only with include_usage, as there
    continuous_usage_stats: bool = False


class TextPart(BaseModel):
    model_config = REQUEST
    type: Literal["text"] = "text"
    text: str


class CalledFunction(BaseModel):
    model_config = REQUEST
    name: str
    arguments: str  # JSON text, as the model wrote it


class MessageToolCall(BaseModel):
    """A call an earlier assistant message made (the history of a tool-using conversation)."""

    model_config = REQUEST
    id: str
    type: Literal["function"] = "function"
    function: CalledFunction

    def for_template(self) -> dict[str, Any]:
        # Chat templates (transformers' convention) take the arguments as an object and render them.
        try:
            arguments = json.loads(self.function.arguments)
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):  # not an object: the template gets the text as it came
            arguments = self.function.arguments
        return {"id": self.id, "type": "function",
                "function": {"name": self.function.name, "arguments": arguments}}


class ChatMessage(BaseModel):
    model_config = REQUEST
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[TextPart] | None = None
    name: str | None = None
    tool_calls: list[MessageToolCall] | None = None  # assistant messages only
    tool_call_id: str | None = None  # tool messages: the call this one answers

    @model_validator(mode="after")
    def _tool_fields_fit_the_role(self) -> ChatMessage:
        if self.tool_calls is not None and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        if (self.tool_call_id is not None) != (self.role == "tool"):
            raise ValueError("a tool message needs tool_call_id, and only a tool message has one")
        return self

    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)

    def for_template(self) -> dict[str, Any]:
        # Chat templates know "system"; OpenAI's newer "developer" role means the same thing.
        message: dict[str, Any] = {"role": "system" if self.role == "developer" else self.role,
                                   "content": self.text()}
        if self.name is not None:
            message["name"] = self.name
        if self.tool_calls:
            message["tool_calls"] = [call.for_template() for call in self.tool_calls]
        if self.tool_call_id is not None:
            message["tool_call_id"] = self.tool_call_id
        return message


class Prediction(BaseModel):
    """Predicted Outputs: text the reply will largely repeat (e.g. the file being edited)."""

    model_config = REQUEST
    type: Literal["content"] = "content"
    content: str | list[TextPart]

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class FunctionDefinition(BaseModel):
    model_config = REQUEST
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str | None = None
    parameters: dict[str, Any] | None = None  # a JSON Schema object
    # strict: the call's arguments are checked against `parameters` once decoded (a call that does not
    # validate is an error, never passed on). Decoding follows `parameters` where the reply must be calls
    # (tool_choice required or named: tool_grammar.py), for every tool; with tool_choice auto it is free
    strict: bool | None = None


class ToolDefinition(BaseModel):
    model_config = REQUEST
    type: Literal["function"]
    function: FunctionDefinition


class FunctionName(BaseModel):
    model_config = REQUEST
    name: str


class NamedToolChoice(BaseModel):
    model_config = REQUEST
    type: Literal["function"]
    function: FunctionName


class JsonSchemaFormat(BaseModel):
    model_config = REQUEST
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    description: str | None = None
    # absent: any JSON object; strict or not, the output is decoded to match it (constrained decoding)
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class ResponseFormat(BaseModel):
    """text, json_object (any JSON object) or json_schema: the output is decoded to match, token by token."""

    model_config = REQUEST
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaFormat | None = None

    @model_validator(mode="after")
    def _schema_with_its_type(self) -> ResponseFormat:
        if self.type == "json_schema" and self.json_schema is None:
            raise ValueError("a json_schema response_format needs its json_schema object")
        if self.type != "json_schema" and self.json_schema is not None:
            raise ValueError(f"json_schema is given but the response_format type is {self.type!r}")
        return self


class EditsConstraint(BaseModel):
    """Our extension to structured_outputs: the reply is edits of these files (path -> text).
    search_replace: SEARCH/REPLACE blocks, each naming one of the files and quoting a run of its whole
    lines; the new code is free. udiff: a unified diff whose hunks' context and removed lines are runs of
    the named file's lines. symbol: blocks of complete Python definitions, each naming one of the Python
    files (the texts are not needed: any name, old or new, may be defined)."""

    model_config = REQUEST
    format: Literal["search_replace", "udiff", "symbol"]
    files: Annotated[dict[str, str], Field(min_length=1)]


class StructuredOutputs(BaseModel):
    """Extension (vLLM's `structured_outputs`): exactly one of a JSON schema, a regex, a Lark grammar
    (llguidance's dialect) or a list of choices, or (ours) `edits`; the output is decoded to match it."""

    model_config = REQUEST
    json_: dict[str, Any] | None = Field(default=None, alias="json")
    regex: Text | None = None
    grammar: Text | None = None
    choice: Annotated[list[Text], Field(min_length=1)] | None = None
    edits: EditsConstraint | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> StructuredOutputs:
        given = [n for n in ("json_", "regex", "grammar", "choice", "edits") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("structured_outputs takes exactly one of json, regex, grammar, choice, edits")
        return self


class Decoding(BaseModel):
    """How a reply is decoded: fields shared by every generation request (chat, completions, responses)."""

    model_config = REQUEST

    temperature: float = Field(default=1.0, ge=0.0, le=2.0)
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    top_k: Int = Field(default=0, ge=-1)  # extension (vLLM); 0 and -1 mean off
    seed: Int | None = Field(default=None, ge=-INT64, lt=INT64)
    prediction: Prediction | None = None
    cache_salt: str | None = None  # extension: requests with different salts never share cached blocks
    ignore_eos: bool = False  # extension (vLLM): generate exactly max_tokens
    speculative: SpeculativeMethod | None = None  # extension: this request's draft method
    structured_outputs: StructuredOutputs | None = None  # extension (vLLM's): constrained decoding


class SamplingRequest(Decoding):
    """Fields shared by /v1/chat/completions and /v1/completions."""

    model: str
    max_tokens: Int | None = Field(default=None, ge=1)
    # The validators below word their own refusals; json_schema_extra states the same rules in the schema.
    stop: str | list[str] | None = Field(default=None, json_schema_extra={
        "minLength": 1, "maxItems": 4, "items": {"type": "string", "minLength": 1}})
    n: Int = Field(default=1, ge=1, le=16)
    stream: bool = False
    stream_options: StreamOptions | None = None
    user: str | None = None
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)

    @field_validator("stop")
    @classmethod
    def _stop_list(cls, value: str | list[str] | None) -> list[str]:
        if value is None:
            return []
        stops = [value] if isinstance(value, str) else value
        if len(stops) > 4:
            raise ValueError("at most 4 stop sequences are allowed")
        if any(not s for s in stops):
            raise ValueError("stop sequences must be non-empty")
        return stops

    @property
    def include_usage(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    @property
    def continuous_usage(self) -> bool:
        return self.include_usage and self.stream_options.continuous_usage_stats

    @property
    def top_logprobs_wanted(self) -> int | None:
        """How many top logprobs each output token comes with; None: no logprobs."""
        return None


class ChatCompletionRequest(SamplingRequest):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: Int | None = Field(default=None, ge=1)
    tools: list[ToolDefinition] | None = None
    tool_choice: Literal["none", "auto", "required"] | NamedToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None
    top_logprobs: Int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)

    @field_validator("top_logprobs")
    @classmethod
    def _top_logprobs_need_logprobs(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and not info.data.get("logprobs"):
            raise ValueError("top_logprobs needs logprobs: true")
        return value

    @property
    def top_logprobs_wanted(self) -> int | None:
        return (self.top_logprobs or 0) if self.logprobs else None

    @model_validator(mode="after")
    def _completion_tokens_win(self) -> ChatCompletionRequest:
        # OpenAI deprecated max_tokens for max_completion_tokens; when both are sent the newer one wins.
        if self.max_completion_tokens is not None:
            self.max_tokens = self.max_completion_tokens
        return self

    @field_validator("tools")
    @classmethod
    def _distinct_tool_names(cls, tools: list[ToolDefinition] | None) -> list[ToolDefinition] | None:
        names = [t.function.name for t in tools or ()]
        if len(set(names)) < len(names):
            raise ValueError("tool function names must be distinct")
        return tools


class CompletionRequest(SamplingRequest):
    prompt: Text | Annotated[list[Text], Field(min_length=1)] | TokenIds | Annotated[
        list[TokenIds], Field(min_length=1)]
    echo: bool = Field(default=False, json_schema_extra={"enum": [False]})
    logprobs: Int | None = Field(default=None, ge=0, le=MAX_COMPLETION_LOGPROBS)  # the legacy API's limit
    suffix: str | None = Field(default=None, json_schema_extra={"maxLength": 0})

    @field_validator("echo")
    @classmethod
    def _no_echo(cls, value: bool) -> bool:
        if value:
            raise ValueError("echo is not supported by this server")
        return value

    @field_validator("suffix")
    @classmethod
    def _no_suffix(cls, value: str | None) -> str | None:
        if value:
            raise ValueError("suffix is not supported by this server")
        return value

    @property
    def top_logprobs_wanted(self) -> int | None:
        return self.logprobs

    def prompts(self) -> list[str | list[int]]:
        """The prompt field as a list of single prompts (OpenAI accepts one or a batch)."""
        if isinstance(self.prompt, str):
            return [self.prompt]
        if isinstance(self.prompt[0], int):
            return [list(self.prompt)]
        return list(self.prompt)


# ---------------------------------------------------------------- responses


class PromptTokensDetails(BaseModel):
    cached_tokens: int = 0


class CompletionTokensDetails(BaseModel):
    accepted_prediction_tokens: int = 0
    rejected_prediction_tokens: int = 0
    reasoning_tokens: int = 0


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class ResponseMetrics(BaseModel):
    """Extension: how the engine served this response."""

    ttft_ms: float | None = None
    mean_itl_ms: float | None = None
    decode_passes: int = 0
    plain_passes: int = 0  # decode passes that verified no draft (one token each), and their total time
    plain_pass_ms: float = 0.0
    prefill_tokens_computed: int = 0
    cached_tokens: int = 0
    cached_tokens_disk: int = 0  # of cached_tokens, those read from the disk tier
    prefill_ms: float | None = None
    decode_ms: float | None = None
    drafts: dict[str, DraftCounts] = Field(default_factory=dict)  # by drafter: prediction, ngram, suffix


def usage_and_metrics(choices: Iterable[tuple[int, Any]]) -> tuple[Usage, ResponseMetrics]:
    """A response's usage and metrics from each choice's (prompt index, RequestMetrics or None); the choices
    of one prompt count its prompt (and cached) tokens once."""
    per_prompt: dict[int, Any] = {}
    completion = accepted = rejected = passes = computed = plain = 0
    plain_s = 0.0
    ttfts: list[float] = []
    itls: list[float] = []
    prefill_s = decode_s = 0.0
    drafts: dict[str, DraftCounts] = {}
    for p_index, m in choices:
        if m is None:
            continue
        per_prompt.setdefault(p_index, m)
        completion += m.completion_tokens
        accepted += m.accepted_draft_tokens
        rejected += m.rejected_draft_tokens
        passes += m.decode_passes
        plain += m.plain_passes
        plain_s += m.plain_pass_s
        computed += m.prefill_tokens_computed
        for name, c in (getattr(m, "drafts", None) or {}).items():
            add_drafts(drafts, name, c.proposed, c.accepted, c.drafts)
        if m.ttft_s is not None:
            ttfts.append(m.ttft_s)
        itls.extend(m.itl_s or ())
        prefill_s = max(prefill_s, m.prefill_s or 0.0)
        decode_s = max(decode_s, m.decode_s or 0.0)
    prompt_tokens = sum(m.prompt_tokens for m in per_prompt.values())
    cached = sum(m.cached_tokens for m in per_prompt.values())
    usage = Usage(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion,
        total_tokens=prompt_tokens + completion,
        prompt_tokens_details=PromptTokensDetails(cached_tokens=cached),
        completion_tokens_details=CompletionTokensDetails(
            accepted_prediction_tokens=accepted, rejected_prediction_tokens=rejected),
    )
    rm = ResponseMetrics(
        ttft_ms=min(ttfts) * 1000 if ttfts else None,
        mean_itl_ms=sum(itls) / len(itls) * 1000 if itls else None,
        decode_passes=passes,
        plain_passes=plain,
        plain_pass_ms=plain_s * 1000,
        prefill_tokens_computed=computed,
        cached_tokens=cached,
        cached_tokens_disk=sum(m.cached_tokens_disk for m in per_prompt.values()),
        prefill_ms=prefill_s * 1000,
        decode_ms=decode_s * 1000,
        drafts=drafts,
    )
    return usage, rm


class FunctionCall(BaseModel):
    name: str
    arguments: str  # JSON text


class ToolCall(BaseModel):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCall


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None
    tool_calls: list[ToolCall] | None = None

    @model_serializer(mode="wrap")
    def _no_empty_tool_calls(self, handler: Any) -> dict:
        data = handler(self)
        if self.tool_calls is None:
            data.pop("tool_calls", None)  # as OpenAI: a message without calls has no tool_calls key
        return data


class ChatChoice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: str | None
    logprobs: ChatLogprobs | None = None


class ChatCompletionResponse(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[ChatChoice]
    usage: Usage
    metrics: ResponseMetrics
    system_fingerprint: str | None = None


class DeltaFunctionCall(BaseModel):
    name: str | None = None
    arguments: str | None = None


class DeltaToolCall(BaseModel):
    """A streamed piece of tool call `index`: its id, type and name first, then pieces of its arguments."""

    index: int
    id: str | None = None
    type: Literal["function"] | None = None
    function: DeltaFunctionCall


class DeltaMessage(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None
    tool_calls: list[DeltaToolCall] | None = None


class ChatChunkChoice(BaseModel):
    index: int
    delta: DeltaMessage
    finish_reason: str | None = None
    logprobs: ChatLogprobs | None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChatChunkChoice]
    usage: Usage | None = None
    metrics: ResponseMetrics | None = None


class TextChoice(BaseModel):
    index: int
    text: str
    finish_reason: str | None
    logprobs: CompletionLogprobs | None = None


class CompletionResponse(BaseModel):
    id: str
    object: Literal["text_completion"] = "text_completion"
    created: int
    model: str
    choices: list[TextChoice]
    usage: Usage
    metrics: ResponseMetrics
    system_fingerprint: str | None = None


class ModelCard(BaseModel):
    """A model as OpenAI's SDK reads it (id, object, created, owned_by) and as Anthropic's does (type,
    display_name, created_at, lifecycle, max_input_tokens, max_tokens): each SDK ignores the other's fields,
    so one card answers both."""

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "deltaserve"
    max_model_len: int | None = None
    type: Literal["model"] = "model"
    display_name: str
    created_at: str  # RFC 3339, `created` as Anthropic writes it
    lifecycle: Literal["active"] = "active"
    max_input_tokens: int | None = None  # the context window, as Anthropic names it
    max_tokens: int | None = None  # the most a reply may ask for


class ModelList(BaseModel):
    """OpenAI's list (object, data) and Anthropic's page of one (data, has_more, first_id, last_id)."""

    object: Literal["list"] = "list"
    data: list[ModelCard]
    has_more: bool = False
    first_id: str | None = None
    last_id: str | None = None


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: str | int | None = None


class ErrorResponse(BaseModel):
    error: ErrorBody
