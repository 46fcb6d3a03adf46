"""The grammar of a reply that must be tool calls, on a real tokenizer and llguidance: a tag the tokenizer
holds as one added token is named by its id (llguidance reads added tokens as special, so the tag's text
would refuse the very token the model writes), any other by its text."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from deltaserve.engine.constraints.grammar import GrammarCompiler
from deltaserve.engine.server.openai_protocol import ToolDefinition
from deltaserve.engine.server.tool_grammar import tag_terminal, tool_call_grammar, tool_tags
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
