"""Prometheus metrics for the server, vLLM-style names under a `deltaserve:` prefix.

Each app gets its own CollectorRegistry (several servers can live in one process, e.g. in tests).
Per-request latencies and token counts are observed by the server when a request ends; engine-wide
counters and gauges (prefix cache, preemptions, KV pool, queue) are read from the engine's latest
stats snapshot at scrape time, so they can never drift from the engine's own numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

P = "deltaserve:"

# Seconds; the same spread vLLM uses, from sub-millisecond GPU steps to slow CPU prefill.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0)
ITL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0,
               2.5, 5.0)
E2E_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 60.0, 120.0, 240.0, 480.0)


class EngineStatsCollector:
    """Exports the engine's own counters and gauges from its latest EngineStats snapshot."""

    def __init__(self, get_stats: Callable[[], Any]) -> None:
        self._get_stats = get_stats

    def describe(self) -> list:
        return []  # unknown until the first scrape; keeps registration from calling collect()

    def collect(self):
        stats = self._get_stats()
        if stats is None:
            return

        def val(name: str) -> float:
            return float(getattr(stats, name, 0) or 0)

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            return CounterMetricFamily(P + name, doc, value=value)

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            return GaugeMetricFamily(P + name, doc, value=value)

        yield counter("prefix_cache_queries", "Prompt tokens looked up in the prefix cache.",
                      val("prefix_cache_queries"))
        yield counter("prefix_cache_hits", "Prompt tokens served from the prefix cache.",
                      val("prefix_cache_hits"))
        yield counter("num_preemptions", "Requests preempted (recomputed later) because KV blocks ran out.",
                      val("preemptions"))
        yield counter("prefix_cache_evictions", "Cached KV blocks evicted for reuse.", val("evictions"))
        drafts, accepted = val("draft_tokens"), val("accepted_draft_tokens")
        yield counter("spec_decode_num_draft_tokens", "Draft tokens proposed for verification.", drafts)
        yield counter("spec_decode_num_accepted_tokens", "Draft tokens accepted by verification.", accepted)
        yield gauge("spec_decode_acceptance_rate", "accepted / proposed draft tokens since start (0: none).",
                    accepted / drafts if drafts else 0.0)
        yield from _disk_tier_metrics(val, counter, gauge)
        yield from _by_drafter(getattr(stats, "drafts", None) or {})
        yield gauge("num_requests_running", "Requests in the running batch.", val("num_running"))
        yield gauge("num_requests_waiting", "Requests waiting to be scheduled.", val("num_waiting"))
        total = val("num_blocks")
        in_use = val("blocks_in_use")
        yield gauge("kv_cache_usage_perc", "Fraction of KV blocks held by requests (0..1).",
                    in_use / total if total else 0.0)
        yield gauge("kv_cache_blocks_total", "KV blocks in the pool.", total)
        yield gauge("kv_cache_blocks_in_use", "KV blocks held by requests.", in_use)
        yield gauge("kv_cache_blocks_cached", "Free KV blocks still holding reusable cached prefixes.",
                    val("blocks_cached"))


def _disk_tier_metrics(val, counter, gauge):
    """The KV disk tier's counters (all 0 when the engine has none)."""
    yield counter("kv_disk_hits", "KV blocks read from the disk tier.", val("kv_disk_hits"))
    yield counter("kv_disk_misses", "Prefix lookups past the memory cache that the disk tier could not "
                  "serve.", val("kv_disk_misses"))
    yield counter("kv_disk_read_bytes", "Bytes read from the KV disk tier.", val("kv_disk_bytes_read"))
    yield counter("kv_disk_written_bytes", "Bytes written to the KV disk tier.", val("kv_disk_bytes_written"))
    yield counter("kv_disk_corrupt_blocks", "KV block files that failed their checksum (dropped, "
                  "recomputed).", val("kv_disk_corrupt_blocks"))
    yield counter("kv_disk_skipped_writes", "KV blocks not written (writer queue full or writing off).",
                  val("kv_disk_skipped_writes"))
    yield counter("kv_disk_evictions", "KV block files evicted to stay under the size bound.",
                  val("kv_disk_evictions"))
    yield gauge("kv_disk_usage_bytes", "Bytes of this model's KV block files on disk.", val("kv_disk_bytes"))
    yield gauge("kv_disk_writable", "1 while the KV disk tier writes, 0 after a write error or without one.",
                val("kv_disk_writable"))


DRAFTER_COUNTERS = {
    "drafts": ("spec_decode_drafter_drafts", "Forward passes that verified a draft from this drafter."),
    "proposed": ("spec_decode_drafter_proposed_tokens", "Draft tokens this drafter proposed."),
    "accepted": ("spec_decode_drafter_accepted_tokens", "Draft tokens of this drafter that were accepted."),
    "rejected": ("spec_decode_drafter_rejected_tokens", "Draft tokens of this drafter rolled back."),
}


def _by_drafter(drafts: dict) -> list[CounterMetricFamily]:
    """Draft counters labelled by drafter (prediction, ngram, suffix)."""
    families = []
    for field, (name, doc) in DRAFTER_COUNTERS.items():
        family = CounterMetricFamily(P + name, doc, labels=["drafter"])
        for drafter, counts in sorted(drafts.items()):
            family.add_metric([drafter], float(getattr(counts, field)))
        families.append(family)
    return families


class ServerMetrics:
    def __init__(self, get_stats: Callable[[], Any]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.ttft = Histogram(P + "time_to_first_token_seconds", "Time to first token.", buckets=TTFT_BUCKETS,
                              registry=r)
        self.itl = Histogram(P + "inter_token_latency_seconds", "Time between consecutive output tokens.",
                             buckets=ITL_BUCKETS, registry=r)
        self.e2e = Histogram(P + "e2e_request_latency_seconds", "Request latency as the server saw it.",
                             buckets=E2E_BUCKETS, registry=r)
        self.prompt_tokens = Counter(P + "prompt_tokens", "Prompt tokens of finished requests.", registry=r)
        self.generation_tokens = Counter(P + "generation_tokens", "Tokens generated.", registry=r)
        self.cached_tokens = Counter(P + "cached_prompt_tokens", "Prompt tokens served from the prefix cache "
                                     "(per request, as reported in usage).", registry=r)
        self.requests = Counter(P + "request_finished", "Finished requests by finish reason.",
                                ["finished_reason"], registry=r)
        self.http_errors = Counter(P + "http_errors", "Error responses by status code.", ["status_code"],
                                   registry=r)
        r.register(EngineStatsCollector(get_stats))

    def observe_request(self, metrics: Any, finish_reason: str | None, e2e_s: float) -> None:
        """Record one engine request that ended (any reason, including abort)."""
        self.requests.labels(finished_reason=finish_reason or "unknown").inc()
        self.e2e.observe(e2e_s)
        if metrics is None:
            return
        self.prompt_tokens.inc(metrics.prompt_tokens)
        self.generation_tokens.inc(metrics.completion_tokens)
        self.cached_tokens.inc(metrics.cached_tokens)
        if metrics.ttft_s is not None:
            self.ttft.observe(metrics.ttft_s)
        for gap in metrics.itl_s or ():
            self.itl.observe(gap)

    def observe_error(self, status_code: int) -> None:
        self.http_errors.labels(status_code=str(status_code)).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
