"""/metrics parses with prometheus_client's own parser and moves by exactly what the requests did."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

TINY = "tiny"


def scrape(http) -> dict[tuple[str, tuple], float]:
    r = http.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_names_and_counters_move_by_expected_amounts(http, wait_idle):
    wait_idle(http)
    before = scrape(http)
    for name in ["deltaserve:time_to_first_token_seconds_count",
                 "deltaserve:inter_token_latency_seconds_count",
                 "deltaserve:e2e_request_latency_seconds_count", "deltaserve:prompt_tokens_total",
                 "deltaserve:generation_tokens_total", "deltaserve:prefix_cache_queries_total",
                 "deltaserve:prefix_cache_hits_total", "deltaserve:num_requests_running",
                 "deltaserve:num_requests_waiting", "deltaserve:kv_cache_usage_perc",
                 "deltaserve:num_preemptions_total", "deltaserve:spec_decode_acceptance_rate"]:
        assert (name, ()) in before, name

    usages = []
    prefix = "Shared system prompt for the metrics test. " * 20
    for i in range(3):
        r = http.post("/v1/chat/completions", json={
            "model": TINY, "max_tokens": 5, "ignore_eos": True, "temperature": 0,
            "messages": [{"role": "system", "content": prefix},
                         {"role": "user", "content": f"question {i}"}]})
        assert r.status_code == 200
        usages.append(r.json()["usage"])
    http.get("/no/such/route")
    wait_idle(http)
    after = scrape(http)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    prompt = sum(u["prompt_tokens"] for u in usages)
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    assert delta("deltaserve:prompt_tokens_total") == prompt
    assert delta("deltaserve:generation_tokens_total") == 15
    assert delta("deltaserve:cached_prompt_tokens_total") == cached
    assert delta("deltaserve:request_finished_total", finished_reason="length") == 3
    assert delta("deltaserve:time_to_first_token_seconds_count") == 3
    assert delta("deltaserve:e2e_request_latency_seconds_count") == 3
    assert delta("deltaserve:inter_token_latency_seconds_count") >= 3  # >= 1 gap per request after its first
    assert delta("deltaserve:http_errors_total", status_code="404") == 1
    # The engine's own prefix-cache counters agree with what the responses reported.
    assert delta("deltaserve:prefix_cache_hits_total") == cached
    assert cached > 0  # requests 2 and 3 share the system prompt with request 1
    assert delta("deltaserve:prefix_cache_queries_total") >= cached
    # Idle again: nothing running, no blocks held.
    assert value(after, "deltaserve:num_requests_running") == 0
    assert value(after, "deltaserve:kv_cache_usage_perc") == 0
    assert value(after, "deltaserve:kv_cache_blocks_total") > 0


def test_health(http):
    assert http.get("/health").json() == {"status": "ok"}
