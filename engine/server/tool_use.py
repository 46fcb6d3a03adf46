"""What a chat request's tools ask of the prompt and of the reply (ToolPlan), and the check of its calls.

Tools reach the model through its own chat template (transformers' `tools=`), so only a template that
renders them in the `<tool_call>` form (template.py) can serve them; any other is a 400 naming `tools`, and
so is a history with tool calls in it. tool_choice:
    auto (the default)  tools in the prompt, calls read from the reply; where the call tags are tokens of
                        their own, decoded under a grammar of free text in which each call block the model
                        opens, and a reply that opens as a bare call, is held to the tools' calls
                        (tool_grammar.py); with a response_format, under one of an answer in that format or
                        calls (structured.py leaves the format to it)
    none                no tools in the prompt, the reply is plain content
    required            the reply is begun with `<tool_call>` for the model, and decoded under a grammar
                        (tool_grammar.py): calls to the request's tools, arguments as their schemas say
    a named function    the same, with that function alone; the reply ends with its call
`parallel_tool_calls: false` ends the reply with its first call. The model writes every call itself. Where no
grammar holds it (tool_choice auto with tags spelled as text, a call written in a ```json fence), a reply that
ends without the call it was asked for, a call to a function the request does not have, or arguments that
break a `strict` tool's schema are an error (500), never a made-up or mended call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import jsonschema

from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.server.openai_protocol import (
    ChatCompletionRequest,
    ChatMessage,
    NamedToolChoice,
    ToolCall,
    ToolDefinition,
)
from deltaserve.engine.server.structured import answer_schema
from deltaserve.engine.server.tool_grammar import tool_call_grammars
from deltaserve.engine.server.tool_parser import CLOSE, OPEN
from deltaserve.errors import APIError

TEMPLATE_HINT = ("; start the server with --chat-template FILE naming a template that renders tools in the "
                 "<tool_call> form (Qwen2.5's, Hermes')")


def refuse_tools(why: str, param: str = "tools") -> APIError:
    return APIError(400, f"{param}: {why}{TEMPLATE_HINT}", param=param, code="tools_not_supported")


@dataclass(frozen=True)
class ToolPlan:
    """How one chat request is prompted and its reply read (the default: no tools, plain content)."""

    tools: list[dict] | None = None  # for the chat template; None: no tools in the prompt
    prefill: str = ""  # the reply's beginning, written for the model
    stop: tuple[str, ...] = ()  # stop strings besides the request's own
    parse: bool = False  # whether the reply is read for tool calls
    required: bool = False  # whether a reply without a call is an error
    one_call: bool = False  # whether the reply ends with its first call
    schemas: dict[str, dict | None] = field(default_factory=dict)  # each tool's parameters, by name
    strict: frozenset[str] = frozenset()  # the tools whose arguments must validate against their schema
    # the grammars the reply may be decoded under, the first that compiles (tool_grammar.py); () = free
    grammars: tuple[GrammarSpec, ...] = ()

    def check(self, calls: list[ToolCall]) -> None:
        """Raise an APIError (500) when a finished reply breaks what the request asked of it."""
        if self.required and not calls:
            raise _broken("tool_choice asked for a tool call and the model's reply holds none",
                          "no_tool_call")
        for call in calls:
            name = call.function.name
            if name not in self.schemas:
                raise _broken(f"the model called {name!r}, which is not among the request's tools "
                              f"({', '.join(self.schemas)})", "invalid_tool_call")
            if name in self.strict:
                _check_strict(name, call.function.arguments, self.schemas[name] or {})


def _broken(message: str, code: str) -> APIError:
    return APIError(500, message, type="server_error", code=code)


def _check_strict(name: str, arguments: str, schema: dict) -> None:
    try:
        jsonschema.validate(json.loads(arguments), schema)
    except ValueError as exc:
        raise _broken(f"the arguments of the model's call to {name!r} are not JSON: {exc}",
                      "invalid_tool_call") from exc
    except jsonschema.ValidationError as exc:
        raise _broken(f"the arguments of the model's call to strict tool {name!r} break its schema: "
                      f"{exc.message}", "invalid_tool_call") from exc
    except jsonschema.SchemaError as exc:  # checked up front by tool_plan; a guard, not a path
        raise _broken(f"tool {name!r} has an invalid schema: {exc.message}", "invalid_tool_call") from exc


def check_history(messages: list[ChatMessage], refused: str | None) -> None:
    """A 400 for a history with tool calls or results on a server whose template cannot render them."""
    if refused is not None and any(m.tool_calls or m.role == "tool" for m in messages):
        raise refuse_tools(f"the history holds tool calls and {refused}", "messages")


def template_tools(tools: list[ToolDefinition]) -> list[dict]:
    """The tools as the chat template gets them (`strict` is for the server, not the model)."""
    return [t.model_dump(exclude_none=True, exclude={"function": {"strict"}}) for t in tools]


def tool_plan(req: ChatCompletionRequest, refused: str | None,
              tags: tuple[str, str] | None = None) -> ToolPlan:
    """The plan for `req` on a server whose template serves tools (`refused` None; `tags`: the call blocks'
    tags as grammar terminals, tool_grammar.tool_tags) or not (why not; no tags). Raises a 400 for tools,
    tool choices or a history the server cannot serve."""
    check_history(req.messages, refused)
    tools = req.tools or []
    if not tools:
        for name in ("tool_choice", "parallel_tool_calls"):
            if getattr(req, name) is not None:
                raise APIError(400, f"{name}: only allowed when tools are given", param=name,
                               code="invalid_value")
        return ToolPlan()
    choice = req.tool_choice or "auto"
    if choice == "none":
        return ToolPlan()
    if refused is not None:
        raise refuse_tools(refused)
    schemas = {t.function.name: t.function.parameters for t in tools}
    strict = frozenset(t.function.name for t in tools if t.function.strict)
    for name in strict:
        _check_schema(name, schemas[name] or {})
    one_call = req.parallel_tool_calls is False
    plan = ToolPlan(tools=template_tools(tools), parse=True, schemas=schemas, strict=strict,
                    stop=(CLOSE,) if one_call else (), one_call=one_call)
    if choice == "required":
        return _calls_required(plan, tools, tags)
    if isinstance(choice, NamedToolChoice):
        name = choice.function.name
        if name not in schemas:
            raise APIError(400, f"tool_choice.function.name: {name!r} is not among the request's tools",
                           param="tool_choice.function.name", code="invalid_value")
        plan = replace(plan, stop=(CLOSE,), one_call=True, schemas={name: schemas[name]})
        named = [t for t in tools if t.function.name == name]
        return _calls_required(plan, named, tags)
    if tags is None:
        return plan
    answer = answer_schema(req.response_format)  # the reply: an answer in this format, or calls
    return replace(plan, grammars=tool_call_grammars(tools, tags, one_call, free_text=True, answer=answer))


def _calls_required(plan: ToolPlan, tools: list[ToolDefinition], tags: tuple[str, str]) -> ToolPlan:
    """A plan whose reply must be calls to `tools`: begun with the open tag, then under their grammar."""
    return replace(plan, prefill=f"{OPEN}\n", required=True,
                   grammars=tool_call_grammars(tools, tags, plan.one_call))


def _check_schema(name: str, schema: Any) -> None:
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise APIError(400, f"tools: the parameters of strict tool {name!r} are no valid JSON Schema: "
                            f"{exc.message}", param="tools", code="invalid_value") from exc
