"""Structured output on the real server (tiny random-weight model, openai SDK): response_format json_object
and json_schema and the `structured_outputs` extension are decoded under their grammar, so a reply the model
ended itself always parses and validates, whatever the model's weights would rather say; streamed too."""

from __future__ import annotations

import json
import re

import httpx
import jsonschema
import openai
import pytest

from tests.server.conftest import TINY

MESSAGES = [{"role": "user", "content": "Describe a cat."}]
# bounded: a random model cannot ramble inside it until max_tokens
CAT = {"type": "object", "additionalProperties": False, "required": ["name", "indoor", "legs"],
       "properties": {"name": {"type": "string", "maxLength": 8}, "indoor": {"type": "boolean"},
                      "legs": {"enum": [3, 4]}, "tags": {"type": "array", "maxItems": 2,
                                                            "items": {"enum": ["calm", "loud"]}}}}
SCHEMA_FORMAT = {"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT, "strict": True}}


@pytest.mark.parametrize("seed", range(4))
def test_json_schema_replies_parse_and_validate(openai_client, seed):
    reply = openai_client.chat.completions.create(model=TINY, messages=MESSAGES, max_tokens=120, seed=seed,
                                                  temperature=1.0, n=2, response_format=SCHEMA_FORMAT)
    for choice in reply.choices:
        assert choice.finish_reason == "stop", choice.message.content
        jsonschema.validate(json.loads(choice.message.content), CAT)


def test_a_greedy_reply_follows_the_schema_and_streams_the_same(openai_client):
    whole = openai_client.chat.completions.create(model=TINY, messages=MESSAGES, max_tokens=120,
                                                  temperature=0, response_format=SCHEMA_FORMAT)
    chunks = openai_client.chat.completions.create(model=TINY, messages=MESSAGES, max_tokens=120,
                                                   temperature=0, response_format=SCHEMA_FORMAT, stream=True)
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    jsonschema.validate(json.loads(whole.choices[0].message.content), CAT)
    assert streamed == whole.choices[0].message.content


def test_json_object_is_an_object_or_cut_by_length(openai_client):
    for seed in range(3):
        choice = openai_client.chat.completions.create(
            model=TINY, messages=MESSAGES, max_tokens=64, seed=seed, temperature=1.0,
            response_format={"type": "json_object"}).choices[0]
        text = choice.message.content
        assert text.startswith("{")
        if choice.finish_reason == "stop":
            assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize("outputs,pattern", [
    ({"regex": r"(yes|no)-[0-9]{2}"}, r"(yes|no)-[0-9]{2}"),
    ({"choice": ["red", "green", "a.b"]}, r"red|green|a\.b"),
    ({"grammar": 'start: "x" ("y" | "z")'}, r"x[yz]"),
])
def test_structured_outputs_extension(openai_client, outputs, pattern):
    for seed in range(3):
        reply = openai_client.completions.create(model=TINY, prompt="Answer:", max_tokens=16, seed=seed,
                                                 temperature=1.0, extra_body={"structured_outputs": outputs})
        assert re.fullmatch(pattern, reply.choices[0].text), reply.choices[0].text
        assert reply.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("body,param", [
    ({"response_format": {"type": "json_object"}, "structured_outputs": {"regex": "a"}},
     "structured_outputs"),
    ({"structured_outputs": {"regex": "a", "choice": ["b"]}}, "structured_outputs"),
    ({"structured_outputs": {"regex": "(unclosed"}}, "structured_outputs"),
    ({"structured_outputs": {"edits": {"format": "symbol", "files": {"notes.txt": "x\n"}}}},
     "structured_outputs"),
])
def test_what_cannot_be_served_is_a_400(http, body, param):
    r = http.post("/v1/chat/completions", json={"model": TINY, "messages": MESSAGES, "max_tokens": 4, **body})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


def test_a_format_beside_callable_tools_is_an_answer_or_calls_and_the_extension_a_400(tool_server):
    """response_format with tools the model may call: an answer in the format or calls (one grammar,
    tests/server/test_tool_calls.py); structured_outputs (ours, edits among them) has no such reading:
    a 400."""
    tools = [{"type": "function", "function": {"name": "f"}}]
    body = {"model": TINY, "messages": MESSAGES, "max_tokens": 4, "tools": tools,
            "response_format": {"type": "json_object"}, "temperature": 0}
    with httpx.Client(base_url=tool_server.url, timeout=60) as http:
        r = http.post("/v1/chat/completions", json=body)
        assert r.status_code == 200, r.text
        message = r.json()["choices"][0]["message"]  # 4 tokens: an answer begun, or a call (perhaps cut)
        assert message.get("tool_calls") or message["content"].startswith(("{", "<tool_call>")), message
        r = http.post("/v1/chat/completions", json={**body, "tool_choice": "none"})
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"].startswith("{")
        extension = {**body, "response_format": None, "structured_outputs": {"regex": "[ab]+"}}
        r = http.post("/v1/chat/completions", json={k: v for k, v in extension.items() if v is not None})
        assert r.status_code == 400 and r.json()["error"]["param"] == "structured_outputs", r.text


def test_a_format_beside_tools_that_cannot_be_decoded_is_a_400_naming_it(tool_server):
    """The format's schema goes into the tools' grammar; where it is what cannot compile, the 400 names
    response_format, not tools."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"not": {"type": "integer"}}}}
    body = {"model": TINY, "messages": MESSAGES, "max_tokens": 4, "tools": tools, "response_format": fmt}
    r = httpx.post(tool_server.url + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["param"] == "response_format", r.text


def test_the_sdk_sees_a_bad_schema_as_bad_request(openai_client):
    with pytest.raises(openai.BadRequestError):
        openai_client.chat.completions.create(
            model=TINY, messages=MESSAGES, max_tokens=4,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 7}}})


def test_edits_extension_gives_search_replace_blocks_that_apply(openai_client):
    files = {"calc.py": "def add(a, b):\n    return a - b\n", "notes.txt": "one\ntwo\n"}
    for seed in range(3):
        reply = openai_client.chat.completions.create(
            model=TINY, messages=[{"role": "user", "content": "Fix add."}], max_tokens=96, seed=seed,
            temperature=1.0, extra_body={"structured_outputs": {"edits": {"format": "search_replace",
                                                                         "files": files}}})
        text = reply.choices[0].message.content
        path, rest = text.split("\n", 1)
        assert path in files and rest.startswith("```\n<<<<<<< SEARCH\n")
        search = rest.split("<<<<<<< SEARCH\n", 1)[1].split("=======\n", 1)[0]
        if "=======\n" in rest:  # the SEARCH part is done: a run of the file's own lines
            assert search and search in files[path]


def test_edits_extension_gives_symbol_blocks_of_the_python_files(openai_client):
    files = {"calc.py": "def add(a, b):\n    return a - b\n", "notes.txt": "one\ntwo\n"}
    for seed in range(2):
        reply = openai_client.chat.completions.create(
            model=TINY, messages=[{"role": "user", "content": "Fix add."}], max_tokens=48, seed=seed,
            temperature=1.0,
            extra_body={"structured_outputs": {"edits": {"format": "symbol", "files": files}}})
        assert reply.choices[0].message.content.startswith("calc.py\n```python\n")


def test_edits_extension_gives_a_diff_of_the_files(openai_client):
    files = {"calc.py": "def add(a, b):\n    return a - b\n"}
    reply = openai_client.chat.completions.create(
        model=TINY, messages=[{"role": "user", "content": "Fix add."}], max_tokens=48, seed=1,
        temperature=1.0,
        extra_body={"structured_outputs": {"edits": {"format": "udiff", "files": files}}})
    assert reply.choices[0].message.content.startswith("```diff\n--- a/calc.py\n+++ b/calc.py\n@@")
