"""The disk tier across processes: process A runs a ~4,000-token prompt with kv_cache_dir=D (cold, writing
blocks), a new process B runs the same prompt on D, and a process without a disk tier gives the plain cold
TTFT. Printed side by side: TTFT, prompt tokens from cache (and from disk), and whether B's greedy output
equals A's. Each run is its own process, so nothing but the directory carries over.

    deltaserve bench kv-disk [--model smollm2-135m] [--prompt-tokens 4000] [--threads 2]
    python -m deltaserve.evals.bench.kv_disk [same options]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time

from deltaserve.engine import Engine, SamplingParams
from deltaserve.evals.bench.reference import synthetic_prompt
from deltaserve.evals.bench.table import table


def one_run(model: str, dtype: str, threads: int, kv_dir: str | None, prompt_tokens: int,
            max_tokens: int) -> dict:
    """In this process: load, run the prompt greedily, wait for the disk writes; the figures as a dict."""
    t0 = time.perf_counter()
    eng = Engine.from_pretrained(model, dtype=dtype, num_threads=threads, kv_cache_dir=kv_dir)
    load_s = time.perf_counter() - t0
    ids = synthetic_prompt(eng, prompt_tokens)
    out = eng.generate(ids, SamplingParams(max_tokens=max_tokens, temperature=0.0))[0]
    t1 = time.perf_counter()
    if eng.kv_disk is not None:
        eng.kv_disk.flush()
    s = eng.stats()
    m = out.metrics
    return {"load_s": load_s, "ttft_s": m.ttft_s, "prompt_tokens": m.prompt_tokens,
            "cached_tokens": m.cached_tokens, "cached_tokens_disk": m.cached_tokens_disk,
            "tokens": out.token_ids, "flush_s": time.perf_counter() - t1,
            "disk_bytes_read": s.kv_disk_bytes_read, "disk_bytes_written": s.kv_disk_bytes_written}


def in_new_process(args: argparse.Namespace, kv_dir: str | None) -> dict:
    argv = [sys.executable, "-m", "deltaserve.evals.bench.kv_disk", "--child", "--model", args.model,
            "--dtype", args.dtype, "--threads", str(args.threads), "--prompt-tokens", str(args.prompt_tokens),
            "--max-tokens", str(args.max_tokens)] + (["--kv-dir", kv_dir] if kv_dir else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_kv_disk(args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="kv-disk-bench-") as kv_dir:
        plain = in_new_process(args, None)
        a = in_new_process(args, kv_dir)
        b = in_new_process(args, kv_dir)
    rows = [[name, r["ttft_s"] * 1000, plain["ttft_s"] / r["ttft_s"], r["cached_tokens"],
             r["cached_tokens_disk"], r["disk_bytes_read"] / 2**20, r["disk_bytes_written"] / 2**20,
             "yes" if r["tokens"] == plain["tokens"] else "NO"]
            for name, r in (("cold, no disk tier", plain), ("A: cold, writes D", a),
                            ("B: new process, D", b))]
    print(table(f"{args.model} {args.dtype}, {plain['prompt_tokens']:,}-token prompt, {args.threads} "
                f"threads, {args.max_tokens} greedy tokens",
                ["run", "TTFT ms", "x vs cold", "cached", "from disk", "MiB read", "MiB written",
                 "same output"], rows))
    share = b["cached_tokens"] / b["prompt_tokens"]
    print(f"B: {share:.1%} of the prompt from cache; TTFT {plain['ttft_s'] / b['ttft_s']:.1f}x lower than "
          f"cold; A waited {a['flush_s']:.2f} s after its reply for the last blocks to reach disk")
    return {"plain": plain, "a": a, "b": b}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="smollm2-135m", help="model name or path (default: %(default)s)")
    p.add_argument("--dtype", default="float32", help="(default: %(default)s: exact greedy comparisons)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    p.add_argument("--prompt-tokens", type=int, default=4000, help="(default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=32, help="greedy reply tokens (default: %(default)s)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kv-dir", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(one_run(args.model, args.dtype, args.threads, args.kv_dir, args.prompt_tokens,
                                 args.max_tokens)))
        return 0
    bench_kv_disk(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
