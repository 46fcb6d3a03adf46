"""The grammars of replies with tool calls, on a real tokenizer and llguidance: a tag the tokenizer holds as
one added token is named by its id (llguidance reads added tokens as special, so the tag's text would refuse
the very token the model writes), any other by its text; with tool_choice auto, text is free and each call
block the model opens is held to the tools' calls."""

from __future__ import annotations

import json

import pytest
from transformers import AutoTokenizer

from deltaserve.engine.constraints.grammar import GrammarCompiler
from deltaserve.engine.server.openai_protocol import ToolDefinition
from deltaserve.engine.server.tool_grammar import (
    tag_terminal,
    tool_call_grammar,
    tool_call_grammars,
    tool_tags,
)
from deltaserve.engine.server.tool_parser import ToolCallParser
from deltaserve.testing.tiny_model import smollm2_tokenizer_dir

CITY = ToolDefinition.model_validate({"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                          "required": ["city"], "additionalProperties": False}}})
CALL = '{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'


@pytest.fixture(scope="module")
def tokenizers():
    plain = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir())
    tagged = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir())
    tagged.add_tokens(["<tool_call>", "</tool_call>"])  # as Qwen2.5's tokenizer holds them
    return plain, tagged


def accepts(tokenizer, tags, text: str) -> bool:
    compiler = GrammarCompiler(tokenizer, len(tokenizer), [tokenizer.eos_token_id])
    constraint = compiler.compile(tool_call_grammar([CITY], tags, one_call=True))
    return all(constraint.accept(t) for t in tokenizer.encode(text, add_special_tokens=False))


def test_tags_are_named_by_id_where_they_are_one_added_token(tokenizers):
    plain, tagged = tokenizers
    assert tool_tags(plain) == ('"<tool_call>"', '"</tool_call>"')
    close_id = tagged.get_added_vocab()["</tool_call>"]
    assert tagged.encode("</tool_call>", add_special_tokens=False) == [close_id]
    assert tag_terminal(tagged, "</tool_call>") == f"<[{close_id}]>"


def test_each_tokenizer_writes_the_call_its_terminals_describe(tokenizers):
    plain, tagged = tokenizers
    assert accepts(plain, tool_tags(plain), CALL)
    assert accepts(tagged, tool_tags(tagged), CALL)
    assert not accepts(tagged, tool_tags(plain), CALL)  # the close tag's text refuses its own token


def test_a_call_outside_the_tools_is_refused(tokenizers):
    plain, _ = tokenizers
    assert not accepts(plain, tool_tags(plain), CALL.replace("get_weather", "launch_rocket"))
    assert not accepts(plain, tool_tags(plain), CALL.replace('"city"', '"town"'))


def test_a_schema_with_its_own_definitions_keeps_them(tokenizers):
    """Pydantic writes nested models under `$defs` and refers to them from the schema's root."""
    plain, _ = tokenizers
    pydantic_style = ToolDefinition.model_validate({"type": "function", "function": {
        "name": "move", "parameters": {
            "$defs": {"Point": {"type": "object", "properties": {"x": {"enum": [0, 1]}}, "required": ["x"],
                                "additionalProperties": False}},
            "type": "object", "properties": {"to": {"$ref": "#/$defs/Point"}}, "required": ["to"],
            "additionalProperties": False}}})
    compiler = GrammarCompiler(plain, len(plain), [plain.eos_token_id])

    def move(to: str) -> bool:
        constraint = compiler.compile(tool_call_grammar([pydantic_style], tool_tags(plain), one_call=True))
        text = f'{{"name": "move", "arguments": {{"to": {to}}}}}\n</tool_call>'
        return all(constraint.accept(t) for t in plain.encode(text, add_special_tokens=False))

    assert move('{"x": 1}')
    assert not move('{"x": 2}')  # the definition holds, not a loose object


def auto_constraint(tokenizer, tools=(CITY,), one_call=False):
    """tool_choice auto's grammar (the tools' parameters, the first of tool_call_grammars)."""
    compiler = GrammarCompiler(tokenizer, len(tokenizer), [tokenizer.eos_token_id])
    grammars = tool_call_grammars(list(tools), tool_tags(tokenizer), one_call, free_text=True)
    return compiler.compile(grammars[0])


def feed(constraint, tokenizer, text: str) -> bool:
    return all(constraint.accept(t) for t in tokenizer.encode(text, add_special_tokens=False))


def test_auto_leaves_text_free_and_holds_each_call_it_opens(tokenizers):
    """tool_choice auto where the tags are tokens of their own: text as the model likes, and from the open
    tag a call to one of the tools, its head forced (drafted whole)."""
    _, tagged = tokenizers
    text = "Let me look that up; it may rain <b>today</b>.\n"
    plain_reply = auto_constraint(tagged)
    assert feed(plain_reply, tagged, text) and plain_reply.accept(tagged.eos_token_id)
    calls = auto_constraint(tagged)
    assert feed(calls, tagged, text + "<tool_call>")
    assert tagged.decode(calls.forced_tokens()) == '\n{"name": "get_weather", "arguments": {"city":'
    assert feed(calls, tagged, "\n" + CALL + "\nDone.")
    rocket = CALL.replace("get_weather", "launch_rocket")
    assert not feed(auto_constraint(tagged), tagged, text + "<tool_call>\n" + rocket)
    assert not feed(auto_constraint(tagged), tagged, "<tool_call>\n" + CALL.replace('"city"', '"town"'))


def test_auto_has_no_grammar_where_a_tag_is_text(tokenizers):
    """A tag spelled as text could be written inside the free text: no grammar, the reply is checked after."""
    plain, tagged = tokenizers
    assert tool_call_grammars([CITY], tool_tags(plain), False, free_text=True) == ()
    assert len(tool_call_grammars([CITY], tool_tags(tagged), False, free_text=True)) == 2


def test_auto_with_a_response_format_is_an_answer_or_calls(tokenizers):
    """tool_choice auto beside a response_format: the reply is an answer in the format or call blocks,
    told apart from the first character (tags spelled as text too)."""
    plain, _ = tokenizers
    schema = {"type": "object", "properties": {"city": {"enum": ["Oslo", "Paris"]}}, "required": ["city"],
              "additionalProperties": False}
    compiler = GrammarCompiler(plain, len(plain), [plain.eos_token_id])

    def reply(text: str) -> bool:
        [exact, _] = tool_call_grammars([CITY], tool_tags(plain), False, free_text=True, answer=schema)
        return feed(compiler.compile(exact), plain, text)

    assert reply('{"city": "Oslo"}')
    assert reply("<tool_call>\n" + CALL)
    assert not reply('{"city": "Rome"}')  # the answer holds to its schema
    assert not reply("Sure, Oslo.")  # no free text
    assert not reply("<tool_call>\n" + CALL.replace("get_weather", "launch_rocket"))


def test_auto_holds_a_reply_that_opens_as_a_bare_call(tokenizers):
    """Small Qwen models write calls as bare JSON, no tags, and Qwen2.5-Coder's template shows the call with
    its outer braces doubled (Qwen2.5-Coder-1.5B wrote `{{"name": "add", ...}}}}`, one brace too many, and
    the reply was no call): a reply that opens as a call is held to the tools' calls, in either form. Other
    text stays free, JSON too."""
    _, tagged = tokenizers
    call = CALL.removesuffix("\n</tool_call>")

    def reply(text: str, one_call: bool = False) -> bool:
        constraint = auto_constraint(tagged, one_call=one_call)
        return feed(constraint, tagged, text) and constraint.accept(tagged.eos_token_id)

    for one_call in (False, True):
        for opening in (call, "{" + call + "}", "\n" + call + "\n"):
            assert reply(opening, one_call), opening
        assert not reply("{" + call + "}}", one_call)  # the brace too many
        assert not reply(call.replace("get_weather", "launch_rocket"), one_call)
        assert not reply(call.replace('"city"', '"town"'), one_call)
        assert not reply('{"name": "Oslo"}', one_call)  # opens as a call: must be one
        for text in ('{"city": "Oslo"}', 'Calling {"name": 1}', '{ "name": 1}', "{{x}}", ""):
            assert reply(text, one_call), text
    assert reply(call + "\n" + call) and not reply(call + "\n" + call, one_call=True)


def test_a_bare_call_decoded_under_the_grammar_is_read_as_that_call(tokenizers):
    """A model set on the extra brace writes the call the parser reads: at each step it takes the longest
    token that goes on with the text it wants and that the grammar allows, and it ends where none does."""
    _, tagged = tokenizers
    wanted = '{{"name": "get_weather", "arguments": {"city": "Oslo"}}}}\nDone.'
    texts = {t: tagged.decode([t]) for t in range(len(tagged))}
    constraint, written = auto_constraint(tagged), ""
    while True:
        rest = wanted[len(written):]
        going_on = sorted((t for t, text in texts.items() if text and rest.startswith(text)),
                          key=lambda t: -len(texts[t]))
        token = next((t for t in going_on if constraint.valid_prefix([t]) == 1), None)
        if token is None:
            break
        assert constraint.accept(token)
        written += texts[token]
    assert written == '{{"name": "get_weather", "arguments": {"city": "Oslo"}}}'
    assert constraint.accept(tagged.eos_token_id)
    parser = ToolCallParser(frozenset({"get_weather"}))
    parser.feed(written, final=True)
    [call] = parser.calls
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Oslo"})
