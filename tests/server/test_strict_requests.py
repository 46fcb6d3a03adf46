"""A request field the server does not implement is a 400 naming it (it once was silently dropped:
`response_format`, `tools`, `"foo_bar": 1`, all HTTP 200); a response_format that is no valid format is a
400 (the JSON ones are served: test_structured_output.py); the endpoints
clients expect beside chat: /v1/models/{id} (`client.models.retrieve`), /tokenize and /detokenize (vLLM's
shapes); `api_key` (401 in OpenAI's shape, /health open); `chat_template` replacing the tokenizer's own."""

from __future__ import annotations

import httpx
import openai
import pytest

from deltaserve.engine.server import create_app
from deltaserve.errors import InvalidRequestError
from tests.server.conftest import TINY, tiny_engine

CHAT = "/v1/chat/completions"
GOOD = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}

UNKNOWN = [
    ("top_level", CHAT, {**GOOD, "foo_bar": 1}, "foo_bar"),
    ("openai_field_we_lack", CHAT, {**GOOD, "logit_bias": {"5": 1}}, "logit_bias"),
    ("in_a_message", CHAT, {**GOOD, "messages": [{"role": "user", "content": "hi", "audio": {}}]},
     "messages.0.audio"),
    ("image_part", CHAT, {**GOOD, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x"}}]}]}, "messages.0.content.0.image_url"),
    ("in_stream_options", CHAT, {**GOOD, "stream": True, "stream_options": {"include_usage": True, "x": 1}},
     "stream_options.x"),
    ("completions", "/v1/completions", {"model": TINY, "prompt": "hi", "best_of": 2}, "best_of"),
    ("legacy_functions", CHAT, {**GOOD, "functions": [{"name": "f"}]}, "functions"),
]


@pytest.mark.parametrize("name,path,body,param", UNKNOWN, ids=[u[0] for u in UNKNOWN])
def test_an_unknown_field_is_a_400_naming_it(http, name, path, body, param):
    r = http.post(path, json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and error["code"] == "unsupported_parameter"
    assert error["message"].startswith(param + ": ") and "not support" in error["message"]


def test_the_sdk_raises_for_an_unknown_field(openai_client):
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.chat.completions.create(model=TINY, messages=GOOD["messages"],
                                              extra_body={"foo_bar": 1})
    assert info.value.param == "foo_bar"


@pytest.mark.parametrize("fmt,param", [
    ({"type": "json_schema"}, "response_format"),
    ({"type": "json_object", "json_schema": {"name": "x"}}, "response_format"),
    ({"type": "yaml"}, "response_format.type"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "frobnicate"}}},
     "response_format"),
])
def test_a_bad_response_format_is_a_400(http, fmt, param):
    r = http.post(CHAT, json={**GOOD, "response_format": fmt})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


def test_text_response_format_is_served(http):
    assert http.post(CHAT, json={**GOOD, "response_format": {"type": "text"}}).status_code == 200


def test_models_retrieve(openai_client, server):
    card = openai_client.models.retrieve(TINY)
    assert card.id == TINY and card.object == "model"
    engine_name = str(server.app.state.async_engine.engine.model_name)  # a path: slashes in the URL path
    assert openai_client.models.retrieve(engine_name).id == engine_name
    with pytest.raises(openai.NotFoundError) as info:
        openai_client.models.retrieve("gpt-17")
    assert info.value.code == "model_not_found"


def test_tokenize_a_text_and_back(http, server):
    tokenizer = server.app.state.async_engine.engine.tokenizer
    r = http.post("/tokenize", json={"prompt": "Hello world", "return_token_strs": True}).json()
    assert r["tokens"] == tokenizer("Hello world")["input_ids"] and r["count"] == len(r["tokens"])
    assert r["max_model_len"] == 2048 and r["token_strs"] == tokenizer.convert_ids_to_tokens(r["tokens"])
    assert http.post("/tokenize", json={"model": TINY, "prompt": "x"}).json().get("token_strs") is None
    back = http.post("/detokenize", json={"model": TINY, "tokens": r["tokens"]}).json()
    assert back == {"prompt": "Hello world"}


def test_tokenize_a_chat_gives_the_prompt_a_chat_completion_gets(http):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    tokens = http.post("/tokenize", json={"model": TINY, "messages": messages}).json()
    usage = http.post(CHAT, json={**GOOD, "messages": messages}).json()["usage"]
    assert tokens["count"] == usage["prompt_tokens"]
    bare = http.post("/tokenize", json={"messages": messages, "add_generation_prompt": False}).json()
    assert bare["count"] < tokens["count"] and tokens["tokens"][:bare["count"]] == bare["tokens"]


@pytest.mark.parametrize("path,body,status,param", [
    ("/tokenize", {"model": "gpt-17", "prompt": "x"}, 404, "model"),
    ("/tokenize", {"prompt": "x", "add_special_tokens": "yes"}, 400, "add_special_tokens"),
    ("/tokenize", {"prompt": "x", "chat_template": "{{ x }}"}, 400, "chat_template"),
    ("/tokenize", {"messages": [{"role": "user", "content": "x"}], "tools": [
        {"type": "function", "function": {"name": "f"}}]}, 400, "tools"),
    ("/detokenize", {"tokens": [1, 10**9]}, 400, "tokens"),
    ("/detokenize", {"tokens": [-1]}, 400, "tokens.0"),
])
def test_tokenize_refusals(http, path, body, status, param):
    r = http.post(path, json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"]["param"] == param


def test_api_key(make_server):
    srv = make_server(api_key="s3cret")
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": "Basic s3cret"}):
            r = http.post(CHAT, json=GOOD, headers=headers)
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
            assert r.json()["error"]["code"] == "invalid_api_key"
            assert http.get("/metrics", headers=headers).status_code == 401
        assert http.get("/health").status_code == 200  # probes carry no key
        assert http.get("/v1/models", headers={"authorization": "Bearer s3cret"}).status_code == 200
        schema = http.get("/openapi.json", headers={"authorization": "Bearer s3cret"}).json()
        assert "401" in schema["paths"][CHAT]["post"]["responses"]
        assert "security" not in schema["paths"]["/health"]["get"]
    wrong = openai.OpenAI(base_url=srv.url + "/v1", api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    right = openai.OpenAI(base_url=srv.url + "/v1", api_key="s3cret", max_retries=0)
    assert right.chat.completions.create(model=TINY, messages=GOOD["messages"], max_tokens=2).choices


def test_chat_template_replaces_the_tokenizers_own(make_server, tiny_llama):
    srv = make_server(chat_template="{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}>")
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        tokens = http.post("/tokenize", json=chat).json()["tokens"]
        assert http.post("/detokenize", json={"tokens": tokens}).json()["prompt"] == "[user] hi\n>"
    with pytest.raises(InvalidRequestError, match="cannot render"):
        create_app(tiny_engine(tiny_llama), chat_template="{% for m in messages %}")
