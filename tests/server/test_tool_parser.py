"""The tool-call reader: a reply cut into any pieces gives the same content and calls as the whole reply
(a plain response and a stream always agree), calls stream as id and name first, then the arguments' own
characters; a block that holds no call is content as written, and a reply with no call keeps every byte;
the fenced form small models fall back to is a call only to one of the request's tools, and so is a call
written with doubled outer braces (as Qwen2.5-Coder's chat template shows it)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltaserve.engine.server.tool_parser import ToolCallParser

TOOLS = frozenset({"get_weather", "search", "note"})

WEATHER = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}\n</tool_call>'
REPLIES = [
    "Sure.\n" + WEATHER + "\n" + WEATHER.replace("Paris", "Oslo") + "\n",
    '<tool_call>\n{"name": "note", "arguments": {"text": "a </tool_call> inside, and a \\" quote"}}\n'
    '</tool_call>',
    '<tool_call>{"arguments": {"q": 2}, "name": "search"}</tool_call>',  # the other key order: read whole
    '<tool_call>{"name": "search", "arguments": "{\\"q\\": 2}"}</tool_call>',  # arguments as JSON text
    "  no call here, just text\n\n",
    "<tool_call>not json</tool_call> and then text\n",
    "a <tool_ca",  # half a tag at the end is content
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par',  # cut by max_tokens
    WEATHER + "\nDone.\n",
    'Here:\n```json\n{\n  "name": "search",\n  "arguments": {"q": "x"}\n}\n```',  # Qwen2.5-Coder-1.5B's form
    '```json\n{"name": "rm_rf", "arguments": {}}\n```\n',  # not a tool of the request: code it showed
    '```json\n[{"name": "search", "arguments": {"q": 1}}, {"name": "note", "arguments": {"text": "t"}}]\n```',
    '```json\n{"name": "search", "arguments": {"q": 1}}\n{"name": "note", "arguments": {"text": "t"}}\n```',
    '{{"name": "search", "arguments": {"q": "x"}}}',  # the doubled braces Qwen2.5-Coder's template shows
    '<tool_call>\n{{"name": "note", "arguments": {"text": "t"}}}\n</tool_call>',
]


def read(reply: str, cuts: list[int], one_call: bool = False) -> tuple[ToolCallParser, list]:
    parser, deltas, at = ToolCallParser(TOOLS, one_call), [], 0
    for n in cuts:
        deltas += parser.feed(reply[at:at + n])
        at += n
    deltas += parser.feed(reply[at:], final=True)
    return parser, deltas


def result(parser: ToolCallParser) -> tuple[str, list[tuple[str, str]]]:
    return parser.content, [(c.function.name, c.function.arguments) for c in parser.calls]


@given(st.sampled_from(REPLIES), st.lists(st.integers(1, 7), max_size=60))
def test_any_split_gives_what_the_whole_reply_gives(reply, cuts):
    whole, _ = read(reply, [])
    pieces, deltas = read(reply, cuts)
    assert result(pieces) == result(whole)
    # the deltas are the result: their content joined, each call's pieces joined
    assert "".join(d.content or "" for d in deltas) == pieces.content
    streamed: dict[int, str] = {}
    for d in deltas:
        for tc in d.tool_calls or ():
            streamed[tc.index] = streamed.get(tc.index, "") + (tc.function.arguments or "")
    assert [streamed[i] for i in range(len(pieces.calls))] == [c.function.arguments for c in pieces.calls]


def test_parallel_calls_and_the_content_before_them():
    parser, _ = read(REPLIES[0], [])
    assert parser.content == "Sure."
    assert [(c.function.name, json.loads(c.function.arguments)) for c in parser.calls] == [
        ("get_weather", {"city": "Paris", "days": [1, 2]}), ("get_weather", {"city": "Oslo", "days": [1, 2]})]
    assert len({c.id for c in parser.calls}) == 2 and all(c.id.startswith("call_") for c in parser.calls)


def test_a_call_streams_its_id_and_name_then_its_arguments_as_they_come():
    _, deltas = read(WEATHER, [1] * len(WEATHER))
    calls = [tc for d in deltas for tc in d.tool_calls or ()]
    head, rest = calls[0], calls[1:]
    assert head.id and head.type == "function" and head.function.name == "get_weather"
    assert head.function.arguments == ""  # sent before any argument arrived
    assert len(rest) > 10 and all(tc.id is None and tc.function.name is None for tc in rest)
    assert "".join(tc.function.arguments for tc in rest) == '{"city": "Paris", "days": [1, 2]}'
    assert not any(d.content for d in deltas)


def test_an_end_tag_inside_an_argument_string_ends_nothing():
    parser, _ = read(REPLIES[1], [3] * 40)
    assert json.loads(parser.calls[0].function.arguments)["text"] == 'a </tool_call> inside, and a " quote'


def test_other_shapes_are_read_when_the_block_closes():
    assert result(read(REPLIES[2], [])[0]) == ("", [("search", '{"q": 2}')])
    assert result(read(REPLIES[3], [])[0]) == ("", [("search", '{"q": 2}')])


def test_a_reply_without_a_call_keeps_every_byte():
    for reply in (REPLIES[4], REPLIES[5], REPLIES[6]):
        parser, _ = read(reply, [2] * 30)
        assert parser.calls == [] and parser.content == reply


def test_a_cut_call_keeps_what_was_written():
    parser, _ = read(REPLIES[7], [])
    assert result(parser) == ("", [("get_weather", '{"city": "Par')])


def test_text_after_a_call_is_content_without_the_whitespace_around_the_call():
    assert result(read(REPLIES[8], [4] * 40)[0])[0] == "Done."
    assert result(read("Sure.\n" + WEATHER + "\nDone.\n", [4] * 40)[0])[0] == "Sure.\nDone."


def test_the_fenced_form_is_a_call_only_to_a_tool_of_the_request():
    assert result(read(REPLIES[9], [3] * 40)[0]) == ("Here:", [("search", '{"q": "x"}')])
    assert result(read(REPLIES[10], [3] * 40)[0]) == (REPLIES[10], [])
    assert result(read(REPLIES[11], [])[0]) == ("", [("search", '{"q": 1}'), ("note", '{"text": "t"}')])
    assert result(read(REPLIES[12], [])[0]) == result(read(REPLIES[11], [])[0])  # one after another


def test_one_call_ends_the_reply_with_its_first_call():
    assert result(read(REPLIES[0], [5] * 60, one_call=True)[0]) == (
        "Sure.", [("get_weather", '{"city": "Paris", "days": [1, 2]}')])
    assert result(read(REPLIES[11], [], one_call=True)[0]) == ("", [("search", '{"q": 1}')])


@pytest.mark.parametrize("pieces", [['{"name": "add", "arguments": {"a": 1, "b": 2}}'],
                                    ["", " {", '"na', 'me": "add", "arg', 'uments": {"a": 1, "b": 2}}',
                                     "\n"]])
def test_a_reply_that_is_a_bare_call_to_a_tool_is_a_call(pieces):
    parser = ToolCallParser(frozenset({"add"}))
    for i, piece in enumerate(pieces):
        parser.feed(piece, final=i == len(pieces) - 1)
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in parser.calls]
    assert calls == [("add", {"a": 1, "b": 2})]
    assert parser.content == ""


@pytest.mark.parametrize("text", ['{"name": "other", "arguments": {}}', '{"name": "Bob", "age": 3}', "{ok}",
                                  '{"nam'])
def test_bare_json_that_is_no_call_to_a_tool_is_content(text):
    parser = ToolCallParser(frozenset({"add"}))
    parser.feed(text, final=True)
    assert not parser.calls and parser.content == text


def test_a_call_written_with_doubled_braces_is_the_call_it_means():
    """Qwen2.5-Coder's template shows `{{"name": <function-name>, "arguments": <args-json-object>}}`; the
    1.5B model answered `{{"name": "add", "arguments": {"x": 17, "y": 25}}}` under tool_choice auto."""
    for reply in (REPLIES[13], REPLIES[13].replace("{{", "{{\n", 1)):
        assert result(read(reply, [2] * 40)[0]) == ("", [("search", '{"q": "x"}')])
    assert result(read("Sure.\n" + REPLIES[14], [3] * 40)[0]) == ("Sure.", [("note", '{"text": "t"}')])


@pytest.mark.parametrize("text", ['{{"name": "rm_rf", "arguments": {}}}', '{{ name }}', '{{"name": "Bob"}}',
                                  '<tool_call>{{"name": "rm_rf", "arguments": {}}}</tool_call>',
                                  '```json\n{{"name": "rm_rf", "arguments": {}}}\n```'])
def test_doubled_braces_are_read_only_as_a_call_to_a_tool_of_the_request(text):
    parser = ToolCallParser(TOOLS)
    parser.feed(text, final=True)
    assert not parser.calls and parser.content == text
