"""Each request limit answers with its own status and a clear message; the server keeps serving."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from deltaserve.engine.server import ServerLimits

TINY = "tiny"
CHAT = "/v1/chat/completions"
LIMITS = ServerLimits(max_prompt_tokens=64, max_tokens=1500, max_waiting=1, max_body_bytes=4096)


@pytest.fixture()
def limited(make_server):
    return make_server({"max_num_seqs": 2}, limits=LIMITS)


def error_of(r: httpx.Response, status: int) -> dict:
    assert r.status_code == status, r.text
    return r.json()["error"]


def test_each_limit_returns_its_status_then_server_serves(limited):
    with httpx.Client(base_url=limited.url, timeout=60) as http:
        long_prompt = {"model": TINY, "messages": [{"role": "user", "content": "word " * 200}],
                       "max_tokens": 2}
        e = error_of(http.post(CHAT, json=long_prompt), 400)
        assert e["code"] == "context_length_exceeded"
        assert "maximum context length is 64 tokens" in e["message"]

        e = error_of(http.post(CHAT, json={"model": TINY, "messages": [{"role": "user", "content": "x"}],
                                           "max_tokens": 1501}), 400)
        assert e["param"] == "max_tokens" and "1500" in e["message"]

        huge = {"model": TINY, "messages": [{"role": "user", "content": "y" * 5000}]}
        e = error_of(http.post(CHAT, json=huge), 413)
        assert e["code"] == "request_too_large" and "4096" in e["message"]

        # Without a Content-Length header (chunked upload) the body is counted as it arrives.
        def chunks():
            yield json.dumps(huge).encode()

        e = error_of(http.post(CHAT, content=chunks(), headers={"content-type": "application/json"}), 413)

        ok = http.post(CHAT, json={"model": TINY, "messages": [{"role": "user", "content": "hi"}],
                                   "max_tokens": 2})
        assert ok.status_code == 200


def test_waiting_queue_over_its_limit_gets_503(limited):
    """Batch of 2 + 1 waiting are admitted; the 4th concurrent request is refused until they end."""

    async def main():
        async with httpx.AsyncClient(base_url=limited.url, timeout=120) as client:
            body = {"model": TINY, "messages": [{"role": "user", "content": "go"}], "max_tokens": 1500,
                    "ignore_eos": True, "stream": True}
            holders = []
            for _ in range(3):
                cm = client.stream("POST", CHAT, json=body)
                r = await cm.__aenter__()
                assert r.status_code == 200
                lines = r.aiter_lines()  # kept referenced: a collected iterator closes the response
                await lines.__anext__()  # the role chunk: the request is admitted
                holders.append((cm, lines))
            refused = await client.post(CHAT, json={**body, "stream": False, "max_tokens": 2})
            for cm, _ in holders:
                await cm.__aexit__(None, None, None)  # disconnect: the three are aborted
            return refused

    refused = asyncio.run(main())
    e = error_of(refused, 503)
    assert e["code"] == "queue_full" and "retry" in e["message"]

    with httpx.Client(base_url=limited.url, timeout=60) as http:
        # Aborts are processed between engine steps; the next request gets in once they are.
        for _ in range(200):
            r = http.post(CHAT, json={"model": TINY, "messages": [{"role": "user", "content": "hi"}],
                                      "max_tokens": 2})
            if r.status_code != 503:
                break
            asyncio.run(asyncio.sleep(0.05))
        assert r.status_code == 200
