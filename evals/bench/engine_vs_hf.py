"""Our engine vs HF generate(), batch 1, same dtype and threads: prefill tok/s and decode tok/s at short
and long context, printed side by side with the speed-up (not a test: the numbers depend on the machine).

    deltaserve bench engine [--dtype bfloat16,float32] [--threads 2] [--repeats 2]
    python -m deltaserve.evals.bench.engine_vs_hf [same options]

Each figure is the median of --repeats runs, HF and ours interleaved so background load hits both.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from deltaserve.engine import Engine, SamplingParams
from deltaserve.evals.bench.reference import (
    add_engine_arguments,
    dtype_list,
    hf_generate_s,
    hf_model,
    synthetic_prompt,
)
from deltaserve.evals.bench.table import table

DECODE_TOKENS = 32


class TokenClock:
    """A generate() streamer that only timestamps: put() gets the prompt first, then each new token."""

    def __init__(self):
        self.times: list[float] = []

    def put(self, value) -> None:
        self.times.append(time.perf_counter())

    def end(self) -> None:
        pass


def hf_prefill_decode(hf, ids: list[int]) -> tuple[float, float]:
    """(prefill tok/s, decode ms/token) of one HF greedy generate(), timed token by token."""
    clock = TokenClock()
    t0 = time.perf_counter()
    hf_generate_s(hf, ids, 1 + DECODE_TOKENS, streamer=clock)
    first, last = clock.times[1], clock.times[-1]
    return len(ids) / (first - t0), 1000 * (last - first) / (len(clock.times) - 2)


def ours_prefill_decode(eng: Engine, ids: list[int]) -> tuple[float, float]:
    out = eng.generate(ids, SamplingParams(max_tokens=1 + DECODE_TOKENS, ignore_eos=True))[0]
    m = out.metrics
    return len(ids) / m.ttft_s, 1000 * m.decode_s / m.decode_passes


def measure(eng: Engine, hf, repeats: int) -> dict[str, float]:
    """Medians of prefill tok/s (2,000-token prompt) and decode ms/token (~50 and ~2,000 ctx), both sides."""
    short, long = synthetic_prompt(eng, 50), synthetic_prompt(eng, 2000)
    ours_prefill_decode(eng, short)  # warm-up both
    hf_prefill_decode(hf, short)
    res: dict[str, list[float]] = {k: [] for k in ("hf_pf", "hf_d50", "hf_d2k", "o_pf", "o_d50", "o_d2k")}
    for _ in range(repeats):
        res["hf_d50"].append(hf_prefill_decode(hf, short)[1])
        res["o_d50"].append(ours_prefill_decode(eng, short)[1])
        pf, d = hf_prefill_decode(hf, long)
        res["hf_pf"].append(pf)
        res["hf_d2k"].append(d)
        pf, d = ours_prefill_decode(eng, long)
        res["o_pf"].append(pf)
        res["o_d2k"].append(d)
    return {k: statistics.median(v) for k, v in res.items()}


def bench_engine(model: str, dtypes: list[str], threads: int, repeats: int) -> None:
    torch.set_num_threads(threads)
    for dtype in dtypes:
        eng = Engine.from_pretrained(model, dtype=dtype, enable_prefix_caching=False,
                                     max_num_batched_tokens=2048, speculative=False)  # plain decode, like HF
        hf = hf_model(model, dtype)
        med = measure(eng, hf, repeats)
        rows = table_rows(med)
        print(table(f"\n{model}, {dtype}, batch 1, {threads} threads, median of {repeats}",
                    ["", "HF generate", "deltaserve", "speed-up"], rows), flush=True)
        del eng, hf


def table_rows(med: dict[str, float]) -> list[list]:
    """[label, HF, ours, speed-up] rows; prefill tok/s: ours/HF, decode ms/token: HF/ours."""
    hf_pf, our_pf = med["hf_pf"], med["o_pf"]
    rows = [["prefill tok/s (2,000-token prompt)", hf_pf, our_pf, f"{our_pf / hf_pf:.2f}x"]]
    for ctx, key in (("~50", "d50"), ("~2,000", "d2k")):
        hf_ms, our_ms = med[f"hf_{key}"], med[f"o_{key}"]
        rows.append([f"decode ms/token at {ctx} ctx", hf_ms, our_ms, f"{hf_ms / our_ms:.2f}x"])
        rows.append([f"decode tok/s at {ctx} ctx", 1000 / hf_ms, 1000 / our_ms, ""])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.engine_vs_hf",
                                     description=__doc__.splitlines()[0])
    add_engine_arguments(parser)
    args = parser.parse_args(argv)
    bench_engine(args.model, dtype_list(args.dtype), args.threads, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
