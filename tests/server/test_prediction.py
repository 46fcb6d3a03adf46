"""`prediction` (Predicted Outputs) reaches the engine's speculative decoder, and shows in usage and
/metrics."""

from __future__ import annotations

import httpx


def spec_counter(http: httpx.Client, name: str) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(f"deltaserve:{name} "):
            return float(line.split()[-1])
    raise AssertionError(f"{name} missing from /metrics")


def test_correct_prediction_is_accepted_and_saves_decode_passes(make_server):
    srv = make_server({"speculative": True})
    body = {"model": "tiny", "messages": [{"role": "user", "content": "rewrite the file"}], "max_tokens": 40,
            "ignore_eos": True, "temperature": 0}
    with httpx.Client(base_url=srv.url, timeout=60) as http:
        plain = http.post("/v1/chat/completions", json=body).json()
        text = plain["choices"][0]["message"]["content"]
        drafts_before = spec_counter(http, "spec_decode_num_draft_tokens_total")
        accepted_before = spec_counter(http, "spec_decode_num_accepted_tokens_total")
        predicted = http.post("/v1/chat/completions",
                              json={**body, "prediction": {"type": "content", "content": text}}).json()
        assert predicted["choices"][0]["message"]["content"] == text  # greedy output is unchanged
        details = predicted["usage"]["completion_tokens_details"]
        assert details["accepted_prediction_tokens"] > 20
        assert predicted["metrics"]["decode_passes"] < plain["metrics"]["decode_passes"]
        accepted = spec_counter(http, "spec_decode_num_accepted_tokens_total") - accepted_before
        drafted = spec_counter(http, "spec_decode_num_draft_tokens_total") - drafts_before
        assert accepted == details["accepted_prediction_tokens"]
        assert drafted == details["accepted_prediction_tokens"] + details["rejected_prediction_tokens"]
        assert 0 < spec_counter(http, "spec_decode_acceptance_rate") <= 1
