"""Resident memory and load time of one engine, measured in a process of its own: load, prefill the given
prompt, decode 32 tokens; print {"load_s", "peak_rss_mb"} as one JSON line. `bench engine` runs it once per
column (ours per variant, llama.cpp where it is installed) after its timed rounds, so our weights are in
the converted-weights cache by then: `load_s` is a second start's.

    python -m deltaserve.evals.bench.engine_memory --model M --ids ids.json (--settings '{...}' | --llama-cpp)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch

DECODE_TOKENS = 32
MEASURE_TIMEOUT_S = 1800


def engine_kwargs(max_tokens: int) -> dict:
    """Our engine as the bench runs it: one request's KV (like llama.cpp's n_ctx), plain batch-1 decode."""
    blocks = -(-(max_tokens + DECODE_TOKENS + 8) // 16) + 4
    return {"enable_prefix_caching": False, "speculative": "off", "max_num_batched_tokens": 2048,
            "max_num_seqs": 1, "num_blocks": blocks}


def peak_rss_mb() -> float:
    """The process's peak resident set (VmHWM), file-backed pages included."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux, bytes on macOS
    return kb / (1 << 20 if sys.platform == "darwin" else 1024)


def measure_ours(model: str, settings: dict, ids: list[int], threads: int) -> dict:
    from deltaserve.engine import Engine, SamplingParams  # after the threads are set

    t0 = time.perf_counter()
    eng = Engine.from_pretrained(model, **settings, **engine_kwargs(len(ids)))
    load_s = time.perf_counter() - t0
    eng.generate(ids, SamplingParams(max_tokens=1 + DECODE_TOKENS, ignore_eos=True))
    return {"load_s": load_s, "peak_rss_mb": peak_rss_mb()}


def measure_llama_cpp(model: str, ids: list[int], threads: int) -> dict:
    from deltaserve.engine.loader import resolve_source
    from deltaserve.evals.bench.llama_cpp import LlamaCpp

    t0 = time.perf_counter()
    lcpp = LlamaCpp(resolve_source(model), threads)
    load_s = time.perf_counter() - t0
    lcpp.prefill_decode(ids, DECODE_TOKENS)
    return {"load_s": load_s, "peak_rss_mb": peak_rss_mb()}


def measure_in_child(model: str, ids_file: Path, threads: int, settings: dict | None) -> dict | str:
    """Run this module in a new process; its JSON, or why there is none."""
    cmd = [sys.executable, "-m", "deltaserve.evals.bench.engine_memory", "--model", model, "--ids",
           str(ids_file), "--threads", str(threads)]
    cmd += ["--llama-cpp"] if settings is None else ["--settings", json.dumps(settings)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=MEASURE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"no result in {MEASURE_TIMEOUT_S} s"
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return f"exit {done.returncode}: {tail}"
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.engine_memory",
                                description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--ids", required=True, type=Path, help="a JSON list of prompt token ids")
    p.add_argument("--threads", type=int, default=2)
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--settings", type=json.loads, help="our engine's EngineConfig settings (JSON)")
    which.add_argument("--llama-cpp", action="store_true", help="llama.cpp on the model's GGUF")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    ids = json.loads(args.ids.read_text())
    got = (measure_llama_cpp(args.model, ids, args.threads) if args.llama_cpp
           else measure_ours(args.model, args.settings, ids, args.threads))
    print(json.dumps(got), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
