"""The grammars of replies with tool calls, so that the model writes its calls by construction: each call a
JSON object naming one of the request's tools, with arguments that match that tool's parameters, in the
`<tool_call>` blocks tool_parser.py reads.

A reply that must be calls (tool_choice "required" or a named function) is begun with `<tool_call>\\n` for
the model (tool_use.py), and the grammar takes it from there: the call, its close, and then (unless the
reply holds one call) more blocks or the end. Without it a small model asked for a call wrote one to a tool
the request does not have (Qwen2.5-Coder-1.5B: 'greet', for a request whose only tool was get_weather), and
the server could only answer 500. A reply that may be calls (tool_choice auto) is free text where the tags
are tokens of their own: each call block the model opens is held to the same grammar, and the text between
is free (a text lexeme cannot hold an added token, so the tag is where the grammar takes over; a tag spelled
as text could be written inside the free text, so there is no such grammar for it).

A tag the tokenizer holds as one added token (`<tool_call>` is token 151657 for Qwen2.5) is named by its id:
llguidance reads added tokens as special, not as the text they spell.
"""

from __future__ import annotations

import json
from typing import Any

from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.constraints.grammar import JSON_OPTIONS
from deltaserve.engine.constraints.spec import ANY_OBJECT
from deltaserve.engine.server.openai_protocol import ToolDefinition
from deltaserve.engine.server.tool_parser import CLOSE, OPEN


def tag_terminal(tokenizer: Any, tag: str) -> str:
    """The Lark terminal of `tag` for llguidance: `<[id]>` for a tag that is one added token, else its
    text."""
    token_id = tokenizer.get_added_vocab().get(tag)
    return f"<[{token_id}]>" if token_id is not None else json.dumps(tag)


def tool_tags(tokenizer: Any) -> tuple[str, str]:
    """The terminals of the open and close tags of a call block."""
    return tag_terminal(tokenizer, OPEN), tag_terminal(tokenizer, CLOSE)


def call_schema(tools: list[ToolDefinition], loose: bool = False) -> dict[str, Any]:
    """A JSON schema of one call: {"name": one of the tools, "arguments": that tool's parameters}.
    `loose`: the arguments may be any object (ToolPlan.check still holds strict tools to their schema).
    Each tool's parameters sit under the root's `$defs`, their own `#...` references moved with them (a
    pydantic model's schema refers to its `#/$defs/...`, which would otherwise point into this root)."""
    calls, defs = [], {}
    for i, tool in enumerate(tools):
        fn = tool.function
        arguments = ANY_OBJECT
        if fn.parameters is not None and not loose:
            defs[f"tool{i}"] = _moved_refs(fn.parameters, f"#/$defs/tool{i}")
            arguments = {"$ref": f"#/$defs/tool{i}"}
        calls.append({"type": "object", "properties": {"name": {"const": fn.name}, "arguments": arguments},
                      "required": ["name", "arguments"], "additionalProperties": False})
    return {"x-guidance": JSON_OPTIONS, "anyOf": calls, **({"$defs": defs} if defs else {})}


def _moved_refs(schema: Any, root: str) -> Any:
    """`schema` with every local reference (`#`, `#/...`) made relative to `root`."""
    if isinstance(schema, dict):
        return {k: (root + v[1:] if k == "$ref" and isinstance(v, str) and v.startswith("#")
                    else _moved_refs(v, root)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_moved_refs(v, root) for v in schema]
    return schema


def is_token(terminal: str) -> bool:
    """Whether a tag's terminal names one added token (tag_terminal)."""
    return terminal.startswith("<[")


def tool_call_grammar(tools: list[ToolDefinition], tags: tuple[str, str], one_call: bool, loose: bool = False,
                      free_text: bool = False, answer: dict | None = None) -> GrammarSpec:
    """The reply after its `<tool_call>\\n`: a call, its close, then (unless `one_call`) more call blocks
    or the end; a newline may follow the last close. `free_text` (tool_choice auto; tags that are tokens):
    the whole reply, free text with call blocks in it (one at most with `one_call`). `answer` (tool_choice
    auto with a response_format: its JSON schema): the whole reply, an answer in that schema or call blocks
    (an answer's `{` and a block's tag tell them apart from the first character, tags spelled as text too)."""
    open_tag, close_tag = tags
    block = f'{open_tag} "\\n" call "\\n" {close_tag}'
    more = "" if one_call else f' ("\\n" {block})* "\\n"?'  # after a first block: more, or the end
    if answer is not None:
        answer = {"x-guidance": JSON_OPTIONS, **answer}
        start = f"start: answer | {block}{more}\nanswer: %json {json.dumps(answer)}\n"
    elif free_text:
        body = f"TEXT? ({block})?" if one_call else f"TEXT? ({block} TEXT?)*"
        start = f"start: {body}\nTEXT: /(?s:.+)/\n"
    else:
        start = f'start: call "\\n" {close_tag}{more}\n'
    return GrammarSpec(kind="lark", source=start + f"call: %json {json.dumps(call_schema(tools, loose))}\n")


def tool_call_grammars(tools: list[ToolDefinition], tags: tuple[str, str], one_call: bool,
                       free_text: bool = False, answer: dict | None = None) -> tuple[GrammarSpec, ...]:
    """The grammars to try, in order: the tools' own parameters; then, where some tool has parameters, any
    object for the arguments (llguidance implements most of JSON Schema, not all: `not`, look-arounds in a
    `pattern`; a strict tool's arguments are then checked after decoding, as without a grammar). With
    `free_text` (tool_choice auto) and no `answer`, none where a tag is not a token of its own."""
    if free_text and answer is None and not all(map(is_token, tags)):
        return ()
    exact = tool_call_grammar(tools, tags, one_call, free_text=free_text, answer=answer)
    if all(t.function.parameters is None for t in tools):
        return (exact,)
    return exact, tool_call_grammar(tools, tags, one_call, loose=True, free_text=free_text, answer=answer)
