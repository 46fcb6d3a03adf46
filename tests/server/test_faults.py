"""Fault injection: a failing request fails alone; a crashing step loop fails its in-flight requests only."""

from __future__ import annotations

import asyncio
import json

import httpx

import deltaserve.engine.engine as engine_module

TINY = "tiny"
CHAT = "/v1/chat/completions"
POISON_SEED = 666


async def stream_events(client: httpx.AsyncClient, body: dict) -> list:
    events = []
    async with client.stream("POST", CHAT, json={**body, "stream": True}) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                events.append("[DONE]" if line == "data: [DONE]" else json.loads(line[6:]))
    return events


def body(seed: int, max_tokens: int = 12) -> dict:
    return {"model": TINY, "messages": [{"role": "user", "content": f"request {seed}"}],
            "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0.8, "seed": seed}


def test_request_whose_sampling_raises_fails_alone(server, http, wait_idle, monkeypatch):
    real_next_token = engine_module.next_token

    def poisoned(seq, sampled):
        if seq.params.seed == POISON_SEED:
            raise RuntimeError("injected sampling failure")
        return real_next_token(seq, sampled)

    monkeypatch.setattr(engine_module, "next_token", poisoned)

    async def main():
        async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            streams = [stream_events(client, body(s)) for s in (1, 2, POISON_SEED, 3)]
            plain = client.post(CHAT, json=body(POISON_SEED))
            return await asyncio.gather(*streams, plain)

    *streams, plain = asyncio.run(main())
    for seed, events in zip((1, 2, POISON_SEED, 3), streams, strict=True):
        assert events[-1] == "[DONE]"
        errors = [e for e in events if isinstance(e, dict) and "error" in e]
        if seed == POISON_SEED:
            assert len(errors) == 1 and "injected sampling failure" in errors[0]["error"]["message"]
            assert errors[0]["error"]["type"] == "server_error"
        else:
            assert not errors
            finishes = [c["finish_reason"] for e in events if isinstance(e, dict) for c in e["choices"]
                        if c["finish_reason"]]
            assert finishes == ["length"]
    assert plain.status_code == 500
    assert plain.json()["error"]["code"] == "engine_error"
    stats = wait_idle(http)
    assert stats["blocks_in_use"] == 0 and stats["requests_in_flight"] == 0
    assert http.post(CHAT, json=body(4)).status_code == 200


def test_crash_in_step_fails_in_flight_requests_and_server_keeps_serving(make_server):
    srv = make_server()
    eng = srv.app.state.async_engine.engine
    real_step = eng.step
    crashed = []

    def crashing_step():
        stats = eng.stats()
        if not crashed and stats.num_running + stats.num_waiting == 3:  # once all three are in flight
            crashed.append(True)
            raise RuntimeError("injected step crash")
        return real_step()

    eng.step = crashing_step

    async def main():
        async with httpx.AsyncClient(base_url=srv.url, timeout=60) as client:
            return await asyncio.gather(*(stream_events(client, body(s, max_tokens=200)) for s in range(3)))

    results = asyncio.run(main())
    for events in results:
        assert events[-1] == "[DONE]"
        errors = [e for e in events if isinstance(e, dict) and "error" in e]
        assert len(errors) == 1 and "injected step crash" in errors[0]["error"]["message"]
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        ok = http.post(CHAT, json=body(9))
        assert ok.status_code == 200 and ok.json()["usage"]["completion_tokens"] == 12
        stats = http.get("/stats").json()
        assert stats["blocks_in_use"] == 0 and stats["requests_in_flight"] == 0
        assert stats["step_failures"] == 1
        assert http.get("/health").status_code == 200
