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
as text could be written inside the free text, so there is no such grammar for it). A reply that opens as a
bare call, `{"name"` with no tag (small Qwen models write them so, and Qwen2.5-Coder's template shows the
call with its outer braces doubled, which the 1.5B model copied with a brace too many), is held to the calls
as well, in either form: it is a call, not content. Free text opening any other way stays free.

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

# A reply that opens as a bare call (`{"name": "`, its outer brace perhaps doubled: Qwen2.5-Coder's template
# shows the call so) is held to the calls. Free text is any reply that does not open so. The head is one
# lexeme, longer than the text's last possible character: llguidance's lexer takes the longest match, so a
# call's first `{` as a lexeme of its own would lose to the free text it also begins. Rust regexes.
BARE_HEAD = r'\s*\{\{?"name"'
BARE_OPENS = {"single": r'/\s*\{"name": "/', "doubled": r'/\s*\{\{"name": "/'}


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
    (an answer's `{` and a block's tag tell them apart from the first character, tags spelled as text too).
    Under `free_text` without an answer, a reply that opens as a bare call is calls (`bare_call_rules`)."""
    open_tag, close_tag = tags
    block = f'{open_tag} "\\n" call "\\n" {close_tag}'
    more = "" if one_call else f' ("\\n" {block})* "\\n"?'  # after a first block: more, or the end
    if answer is not None:
        answer = {"x-guidance": JSON_OPTIONS, **answer}
        start = f"start: answer | {block}{more}\nanswer: %json {json.dumps(answer)}\n"
    elif free_text:
        blocks = f"FIRST_TEXT? ({block})?" if one_call else f"FIRST_TEXT? ({block} TEXT?)*"
        start = (f"start: {blocks} | {'bare' if one_call else 'bare+'} END?\n"
                 f"FIRST_TEXT: /(?s:.+)/ & ~/(?s:{BARE_HEAD}.*)/\nTEXT: /(?s:.+)/\nEND: /\\s+/\n"
                 + bare_call_rules(tools, loose))
    else:
        start = f'start: call "\\n" {close_tag}{more}\n'
    return GrammarSpec(kind="lark", source=start + f"call: %json {json.dumps(call_schema(tools, loose))}\n")


def bare_call_rules(tools: list[ToolDefinition], loose: bool) -> str:
    """`bare`: one call without tags, `{"name": "...", "arguments": {...}}` or with its outer braces doubled,
    each tool's arguments as `call_schema` holds them (the head up to the name's first quote is the one
    lexeme of BARE_OPENS)."""
    named, arguments = [], []
    for i, tool in enumerate(tools):
        fn = tool.function
        schema = ANY_OBJECT if fn.parameters is None or loose else fn.parameters
        rest_of_head = fn.name + '", "arguments": '
        named.append(f"{json.dumps(rest_of_head, ensure_ascii=False)} arguments{i}")
        arguments.append(f"arguments{i}: %json {json.dumps({'x-guidance': JSON_OPTIONS, **schema})}\n")
    return (f'bare: SINGLE named "}}" | DOUBLED named "}}}}"\nnamed: {" | ".join(named)}\n'
            f'SINGLE: {BARE_OPENS["single"]}\nDOUBLED: {BARE_OPENS["doubled"]}\n' + "".join(arguments))


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
