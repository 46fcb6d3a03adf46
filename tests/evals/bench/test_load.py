"""A short load run with disconnects against a real `deltaserve serve` subprocess."""

from __future__ import annotations

import asyncio
import socket

import httpx

from deltaserve.evals.bench.load import LoadConfig, ServeProcess, main, run_load


def test_short_load_run_with_disconnects_leaves_a_clean_pool(tiny_llama):
    cfg = LoadConfig(requests=60, concurrency=16, disconnect_fraction=0.2, invalid_every=15, max_tokens=24,
                     seed=1)
    args = ["--max-num-seqs", "16", "--num-blocks", "1024", "--num-threads", "1",
            "--served-model-name", "tiny"]
    with ServeProcess(str(tiny_llama), args) as server:
        report = asyncio.run(run_load(server.url, "tiny", cfg))
        assert report.errors == 0, report.error_details
        assert report.rejected_invalid == 4  # every 15th request is malformed and refused with a 4xx
        assert report.aborted > 0
        assert report.completed + report.aborted + report.rejected_invalid == 60
        assert report.kv_after["blocks_in_use"] == 0 and report.kv_after["requests_in_flight"] == 0
        assert report.kv_after["num_running"] == 0 and report.kv_after["num_waiting"] == 0
        assert report.ttft_p50_ms is not None and report.itl_p95_ms is not None
        assert report.cached_prompt_tokens > 0  # the long prompts share their prefix
        metrics = httpx.get(server.url + "/metrics").text
        aborted = next(float(line.split()[-1]) for line in metrics.splitlines()
                       if line.startswith('deltaserve:request_finished_total{finished_reason="abort"}'))
        # A client may leave just after its last token was generated: then the server finished it normally.
        assert 0 < aborted <= report.aborted
        assert report.ok


def test_unreachable_url_is_a_clear_error(capsys):
    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["--url", f"http://127.0.0.1:{port}", "--requests", "2"]) == 2
    assert capsys.readouterr().err.startswith(f"load: cannot reach http://127.0.0.1:{port}")
