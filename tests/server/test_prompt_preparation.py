"""Prompts are bounded and tokenized off the engine thread: a huge prompt is refused before anything tokenizes
it, and a slow tokenization never holds up the running batch (one 8 MB message once stalled every stream
for seconds, tokenized on the engine thread before its length check)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

TINY = "tiny"
CHAT = "/v1/chat/completions"
GOOD = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}


@pytest.fixture()
def template_calls(server, monkeypatch):
    """The names of the threads the engine's chat template was applied on, during the test."""
    engine = server.app.state.async_engine.engine
    real, calls = engine.apply_chat_template, []

    def recorded(messages):
        calls.append(threading.current_thread().name)
        return real(messages)

    monkeypatch.setattr(engine, "apply_chat_template", recorded)
    return calls


def test_tokenizing_runs_on_the_tokenizer_thread(http, template_calls):
    assert http.post(CHAT, json=GOOD).status_code == 200
    assert len(template_calls) == 1 and template_calls[0].startswith("deltaserve-tokenizer")


def test_an_8_mb_message_is_refused_before_it_is_tokenized(http, template_calls):
    huge = {**GOOD, "messages": [{"role": "user", "content": "lorem ipsum " * 666_000}]}  # 7.99 MB
    r = http.post(CHAT, json=huge)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert "(7992000 characters)" in error["message"] and "context length is 2048 tokens" in error["message"]
    assert template_calls == []
    r = http.post("/v1/completions", json={"model": TINY, "prompt": "x" * 7_000_000, "max_tokens": 1})
    assert r.status_code == 400 and "7000000 characters" in r.json()["error"]["message"]


def test_a_prediction_longer_than_any_reply_is_refused(http):
    r = http.post(CHAT, json={**GOOD, "prediction": {"type": "content", "content": "y" * 7_000_000}})
    assert r.status_code == 400 and "prediction has 7000000 characters" in r.json()["error"]["message"]


def _stream_finishes(url: str) -> list:
    """A streamed completion of token ids (no tokenizing) read to its end, with a read timeout."""
    body = {"model": TINY, "prompt": [1, 2, 3], "max_tokens": 20, "ignore_eos": True, "stream": True}
    with httpx.Client(base_url=url, timeout=30) as client, client.stream("POST", "/v1/completions",
                                                                         json=body) as r:
        return [json.loads(line[6:])["choices"][0]["finish_reason"] for line in r.iter_lines()
                if line.startswith("data: {")]


def test_a_stuck_tokenization_does_not_hold_up_a_running_stream(server, monkeypatch):
    """While one request's chat template is stuck, another request streams to its end."""
    engine = server.app.state.async_engine.engine
    real, entered, release = engine.apply_chat_template, threading.Event(), threading.Event()

    def stuck(messages):
        entered.set()
        release.wait(60)
        return real(messages)

    monkeypatch.setattr(engine, "apply_chat_template", stuck)
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(httpx.post, server.url + CHAT, json=GOOD, timeout=120)
        try:
            assert entered.wait(30)
            assert _stream_finishes(server.url)[-1] == "length"
        finally:
            release.set()
        assert slow.result().status_code == 200
