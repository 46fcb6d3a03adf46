"""Continuous batching under concurrent streaming clients, and clients that leave mid-stream."""

from __future__ import annotations

import asyncio
import json

import httpx

TINY = "tiny"


async def stream_chat(client: httpx.AsyncClient, i: int, max_tokens: int,
                      leave_after: int | None = None) -> dict:
    """One streaming chat; returns what the client saw. `leave_after`: disconnect after that many chunks."""
    body = {"model": TINY, "messages": [{"role": "user", "content": f"Client {i}: count to ten."}],
            "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    seen = {"text": "", "done": False, "usage": None, "finish": None}
    async with client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        chunks = 0
        async for line in r.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                seen["done"] = True
                break
            event = json.loads(line[6:])
            assert "error" not in event, event
            seen["usage"] = event.get("usage") or seen["usage"]
            for choice in event["choices"]:
                seen["text"] += choice["delta"].get("content") or ""
                seen["finish"] = choice["finish_reason"] or seen["finish"]
                chunks += 1
            if leave_after is not None and chunks >= leave_after:
                break  # leaving the context manager closes the connection
    return seen


def test_32_concurrent_streaming_clients_all_complete(server, http, wait_idle):
    async def main():
        async with httpx.AsyncClient(base_url=server.url, timeout=120,
                                     limits=httpx.Limits(max_connections=40)) as client:
            return await asyncio.gather(*(stream_chat(client, i, max_tokens=16) for i in range(32)))

    results = asyncio.run(main())
    assert all(r["done"] and r["finish"] == "length" for r in results)
    assert all(r["usage"]["completion_tokens"] == 16 for r in results)
    assert all(r["text"] for r in results)
    stats = wait_idle(http)
    assert stats["blocks_in_use"] == 0 and stats["requests_in_flight"] == 0


def aborted_count(http: httpx.Client) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith('deltaserve:request_finished_total{finished_reason="abort"}'):
            return float(line.split()[-1])
    return 0.0


def test_clients_that_disconnect_early_free_their_kv_blocks(server, http, wait_idle):
    before = aborted_count(http)

    async def main():
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as client:
            # Long generations (1500 tokens each) that every client abandons after 3 chunks.
            streams = (stream_chat(client, i, max_tokens=1500, leave_after=3) for i in range(8))
            return await asyncio.gather(*streams)

    results = asyncio.run(main())
    assert not any(r["done"] for r in results)
    stats = wait_idle(http)
    assert stats["requests_in_flight"] == 0
    assert stats["blocks_in_use"] == 0
    assert stats["num_running"] == 0 and stats["num_waiting"] == 0
    assert aborted_count(http) - before == 8


def test_non_streaming_client_that_leaves_aborts_its_request(server, http, wait_idle):
    before = aborted_count(http)
    body = {"model": TINY, "messages": [{"role": "user", "content": "long"}], "max_tokens": 1800,
            "ignore_eos": True}
    try:
        httpx.post(server.url + "/v1/chat/completions", json=body, timeout=0.5)
    except httpx.TimeoutException:
        pass  # the client gave up; the server notices on its next disconnect poll
    stats = wait_idle(http)
    assert stats["requests_in_flight"] == 0 and stats["blocks_in_use"] == 0
    assert aborted_count(http) - before == 1
