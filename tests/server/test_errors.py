"""Every bad request gets its status and OpenAI's error envelope, and the server keeps serving."""

from __future__ import annotations

import json

import pytest

TINY = "tiny"
CHAT = "/v1/chat/completions"
GOOD = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}

BAD_REQUESTS = [
    # (id, path, body (dict or raw text), status, param, code)
    ("bad_json", CHAT, '{"model": "tiny", "messages": [', 400, None, "invalid_json"),
    ("json_array", CHAT, "[1, 2]", 400, None, "invalid_json"),
    ("negative_max_tokens", CHAT, {**GOOD, "max_tokens": -1}, 400, "max_tokens", "invalid_value"),
    ("zero_max_tokens", CHAT, {**GOOD, "max_tokens": 0}, 400, "max_tokens", "invalid_value"),
    ("negative_max_completion_tokens", CHAT, {**GOOD, "max_completion_tokens": -3}, 400,
     "max_completion_tokens", "invalid_value"),
    ("empty_messages", CHAT, {**GOOD, "messages": []}, 400, "messages", "invalid_value"),
    ("missing_messages", CHAT, {"model": TINY}, 400, "messages", "invalid_value"),
    ("missing_model", CHAT, {"messages": GOOD["messages"]}, 400, "model", "invalid_value"),
    ("bad_role", CHAT, {**GOOD, "messages": [{"role": "wizard", "content": "x"}]}, 400, None,
     "invalid_value"),
    ("temperature_too_high", CHAT, {**GOOD, "temperature": 7}, 400, "temperature", "invalid_value"),
    ("top_p_zero", CHAT, {**GOOD, "top_p": 0}, 400, "top_p", "invalid_value"),
    ("five_stops", CHAT, {**GOOD, "stop": ["a", "b", "c", "d", "e"]}, 400, "stop", "invalid_value"),
    ("n_zero", CHAT, {**GOOD, "n": 0}, 400, "n", "invalid_value"),
    ("top_logprobs_past_20", CHAT, {**GOOD, "logprobs": True, "top_logprobs": 21}, 400, "top_logprobs",
     "invalid_value"),
    ("penalty_past_2", CHAT, {**GOOD, "presence_penalty": 2.5}, 400, "presence_penalty", "invalid_value"),
    ("unknown_model", CHAT, {**GOOD, "model": "gpt-17"}, 404, "model", "model_not_found"),
    ("prompt_longer_than_context", "/v1/completions", {"model": TINY, "prompt": [5] * 3000, "max_tokens": 1},
     400, None, "context_length_exceeded"),
    ("prompt_plus_max_tokens_over_context", "/v1/completions",
     {"model": TINY, "prompt": [5] * 2000, "max_tokens": 100}, 400, None, "context_length_exceeded"),
    ("empty_prompt", "/v1/completions", {"model": TINY, "prompt": ""}, 400, None, None),
    ("stream_with_bad_params", CHAT, {**GOOD, "stream": True, "max_tokens": -2}, 400, "max_tokens",
     "invalid_value"),
]


def check_envelope(r, status: int, param: str | None = None, code: str | None = None) -> dict:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"]
    if param is not None:
        assert error["param"] == param
    if code is not None:
        assert error["code"] == code
    return error


@pytest.mark.parametrize("name,path,body,status,param,code", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_request_gets_status_and_envelope_then_server_still_serves(http, name, path, body, status, param,
                                                                        code):
    content = body if isinstance(body, str) else json.dumps(body)
    r = http.post(path, content=content, headers={"content-type": "application/json"})
    check_envelope(r, status, param, code)
    ok = http.post(CHAT, json=GOOD)
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] is not None


def test_prompt_too_long_message_says_how_long(http):
    error = check_envelope(http.post("/v1/completions", json={"model": TINY, "prompt": [5] * 3000}), 400)
    assert "3000" in error["message"] and "2048" in error["message"]


def test_unknown_route_and_wrong_method(http):
    check_envelope(http.post("/v1/embeddings", json={}), 404, code="not_found")
    check_envelope(http.get("/nope"), 404, code="not_found")
    check_envelope(http.get(CHAT), 405)


def test_the_user_field_is_accepted(http):
    r = http.post(CHAT, json={**GOOD, "user": "alice"})
    assert r.status_code == 200
    assert r.json()["usage"]["prompt_tokens_details"]["cached_tokens"] >= 0


def test_max_completion_tokens_wins_over_max_tokens(http):
    r = http.post(CHAT, json={**GOOD, "max_tokens": 9, "max_completion_tokens": 2, "ignore_eos": True})
    assert r.json()["usage"]["completion_tokens"] == 2


def test_content_parts_and_developer_role_are_accepted(http):
    body = {**GOOD, "messages": [{"role": "developer", "content": "Be brief."},
                                 {"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert http.post(CHAT, json=body).status_code == 200
