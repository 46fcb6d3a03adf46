"""Draft counts by drafter in a response's `metrics` and in /metrics; the suffix drafter's history stays
inside a cache_salt; a request may choose its own draft method."""

from __future__ import annotations

import httpx

BODY = {"model": "tiny", "messages": [{"role": "user", "content": "say something long"}], "max_tokens": 40,
        "ignore_eos": True, "temperature": 0}


def by_drafter(http: httpx.Client, name: str) -> dict[str, float]:
    prefix = f"deltaserve:{name}_total{{drafter=\""
    return {line[len(prefix):].split('"')[0]: float(line.split()[-1])
            for line in http.get("/metrics").text.splitlines() if line.startswith(prefix)}


def test_suffix_history_drafts_a_repeat_within_its_salt_only(make_server):
    srv = make_server({"speculative": "suffix"})
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        first = http.post("/v1/chat/completions", json=BODY).json()
        again = http.post("/v1/chat/completions", json=BODY).json()
        other = http.post("/v1/chat/completions", json={**BODY, "cache_salt": "tenant-b"}).json()
        text = first["choices"][0]["message"]["content"]
        assert again["choices"][0]["message"]["content"] == other["choices"][0]["message"]["content"] == text
        seen = again["metrics"]["drafts"]["suffix"]
        assert seen["accepted"] > 20 and seen["proposed"] == seen["accepted"] + seen["rejected"]
        assert again["metrics"]["decode_passes"] < first["metrics"]["decode_passes"]
        # another tenant gets no drafts from the first request's text: it drafts as the first one did
        assert other["metrics"]["drafts"] == first["metrics"]["drafts"]
        accepted = by_drafter(http, "spec_decode_drafter_accepted_tokens")
        proposed = by_drafter(http, "spec_decode_drafter_proposed_tokens")
        responses = (first, again, other)
        assert accepted["suffix"] == sum(r["metrics"]["drafts"].get("suffix", {}).get("accepted", 0)
                                         for r in responses)
        assert proposed["suffix"] == sum(r["metrics"]["drafts"].get("suffix", {}).get("proposed", 0)
                                         for r in responses)
        off = http.post("/v1/chat/completions", json={**BODY, "speculative": "off"}).json()
        assert off["metrics"]["drafts"] == {} and off["choices"][0]["message"]["content"] == text
        bad = http.post("/v1/chat/completions", json={**BODY, "speculative": "eagle"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "speculative"
