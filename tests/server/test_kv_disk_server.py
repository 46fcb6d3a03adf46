"""A server restarted on the same --kv-cache-dir serves a repeated prompt from disk: the response's
`metrics` object says how many cached tokens came from disk, and /metrics exports the tier's counters."""

from __future__ import annotations

import httpx

PROMPT = "def add(a, b):\n    return a - b\n" * 12


def ask(server) -> dict:
    body = {"model": "tiny", "prompt": PROMPT, "max_tokens": 4, "temperature": 0}
    with httpx.Client(base_url=server.url, timeout=60) as client:
        return client.post("/v1/completions", json=body).json()


def test_a_restarted_server_serves_the_prompt_from_disk(make_server, tmp_path, wait_idle):
    engine_kwargs = {"kv_cache_dir": str(tmp_path), "speculative": False}
    first = make_server(engine_kwargs)
    cold = ask(first)
    assert cold["metrics"]["cached_tokens"] == 0 and cold["metrics"]["cached_tokens_disk"] == 0
    first.app.state.async_engine.engine.kv_disk.flush()  # written before the next server reads the dir
    first.stop()

    second = make_server(engine_kwargs)
    warm = ask(second)
    prompt_tokens = warm["usage"]["prompt_tokens"]
    assert warm["choices"][0]["text"] == cold["choices"][0]["text"]
    assert warm["metrics"]["cached_tokens_disk"] == warm["metrics"]["cached_tokens"] > prompt_tokens * 0.8
    assert warm["usage"]["prompt_tokens_details"]["cached_tokens"] == warm["metrics"]["cached_tokens"]
    with httpx.Client(base_url=second.url, timeout=60) as client:
        text = client.get("/metrics").text
    hits = next(line for line in text.splitlines() if line.startswith("deltaserve:kv_disk_hits_total"))
    assert float(hits.split()[-1]) == warm["metrics"]["cached_tokens_disk"] // 16
    assert "deltaserve:kv_disk_read_bytes_total" in text and "deltaserve:kv_disk_writable 1.0" in text
