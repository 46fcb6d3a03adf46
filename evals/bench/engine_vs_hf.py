"""Benchmarks, printed side by side with ratios (not tests: the numbers depend on the machine).

    deltaserve bench engine   # issue 2: HF generate() vs our engine, batch 1, same dtype, 2 threads
    deltaserve bench prefix   # issue 3: agent workload TTFT per turn; 8 concurrent vs one at a time
    python -m deltaserve.evals.bench.engine_vs_hf engine|prefix|all [--dtype bfloat16,float32] [--threads 2] [--repeats 2]

Each figure is the median of --repeats runs, HF and ours interleaved so background load hits both.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.loader import convert_gguf, resolve_source

DECODE_TOKENS = 32


def hf_model(name: str, dtype: str):
    from transformers import AutoModelForCausalLM

    source = resolve_source(name)
    model_dir = convert_gguf(source) if source.is_file() else source
    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype)).eval()


def hf_generate_s(hf, ids: list[int], new_tokens: int) -> float:
    """Wall seconds of HF greedy generate() producing exactly new_tokens tokens."""
    x = torch.tensor([ids])
    t = time.perf_counter()
    with torch.inference_mode():
        hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                    do_sample=False, pad_token_id=0)
    return time.perf_counter() - t


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
    x = torch.tensor([ids])
    clock = TokenClock()
    t0 = time.perf_counter()
    with torch.inference_mode():
        hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=1 + DECODE_TOKENS,
                    min_new_tokens=1 + DECODE_TOKENS, do_sample=False, pad_token_id=0, streamer=clock)
    first, last = clock.times[1], clock.times[-1]
    return len(ids) / (first - t0), 1000 * (last - first) / (len(clock.times) - 2)


def ours_prefill_decode(eng: Engine, ids: list[int]) -> tuple[float, float]:
    out = eng.generate(ids, SamplingParams(max_tokens=1 + DECODE_TOKENS, ignore_eos=True))[0]
    m = out.metrics
    return len(ids) / m.ttft_s, 1000 * m.decode_s / m.decode_passes


def synthetic_prompt(eng: Engine, n_tokens: int) -> list[int]:
    """Real text (our own source files), cut to n_tokens."""
    text = "".join(p.read_text() for p in sorted(Path(__file__).parent.glob("*.py")))
    ids = eng.tokenizer(text)["input_ids"]
    while len(ids) < n_tokens:
        ids = ids + ids
    return ids[:n_tokens]


def table(title: str, header: list[str], rows: list[list]) -> str:
    cells = [header] + [[c if isinstance(c, str) else f"{c:,.2f}" for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells[1:]]
    return "\n".join(lines)


def bench_engine(model: str, dtypes: list[str], threads: int, repeats: int) -> None:
    torch.set_num_threads(threads)
    for dtype in dtypes:
        eng = Engine.from_pretrained(model, dtype=dtype, enable_prefix_caching=False, max_num_batched_tokens=2048,
                                    speculative=False)  # plain decode, like HF generate
        hf = hf_model(model, dtype)
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
        med = {k: statistics.median(v) for k, v in res.items()}
        rows = [
            ["prefill tok/s (2,000-token prompt)", med["hf_pf"], med["o_pf"], f"{med['o_pf'] / med['hf_pf']:.2f}x"],
            ["decode ms/token at ~50 ctx", med["hf_d50"], med["o_d50"], f"{med['hf_d50'] / med['o_d50']:.2f}x"],
            ["decode tok/s at ~50 ctx", 1000 / med["hf_d50"], 1000 / med["o_d50"], ""],
            ["decode ms/token at ~2,000 ctx", med["hf_d2k"], med["o_d2k"], f"{med['hf_d2k'] / med['o_d2k']:.2f}x"],
            ["decode tok/s at ~2,000 ctx", 1000 / med["hf_d2k"], 1000 / med["o_d2k"], ""],
        ]
        print(table(f"\n{model}, {dtype}, batch 1, {threads} threads, median of {repeats}",
                    ["", "HF generate", "deltaserve", "speed-up"], rows), flush=True)
        del eng, hf


AGENT_TASK = ("You are a coding assistant working on the file below. Answer briefly and precisely, "
              "quoting line numbers when you refer to code.\n\n")
TURNS = [
    "What does this file do, in two sentences?",
    "Which function would you change to add a new model architecture?",
    "Is there any input that could make the forward pass fail?",
    "Suggest one test for the attention code.",
    "Summarise our discussion in one line.",
]


def agent_messages(eng: Engine, context_tokens: int) -> list[dict]:
    code = eng.tokenizer.decode(synthetic_prompt(eng, context_tokens))
    return [{"role": "system", "content": AGENT_TASK + code}]


def bench_prefix(model: str, dtype: str, threads: int, reply_tokens: int = 32) -> None:
    torch.set_num_threads(threads)
    cached = Engine.from_pretrained(model, dtype=dtype)
    plain = Engine.from_pretrained(model, dtype=dtype, enable_prefix_caching=False, speculative=False)
    hf = hf_model(model, dtype)
    messages = agent_messages(cached, 2000)
    cached.generate(cached.apply_chat_template(messages[:1] + [{"role": "user", "content": "hi"}]),
                    SamplingParams(max_tokens=2))  # warm-up; a different prompt tail, but it primes the cache
    cached.blocks.__init__(cached.blocks.num_blocks, cached.blocks.block_size)  # start cold and count from 0
    rows = []
    for turn, question in enumerate(TURNS, 1):
        messages.append({"role": "user", "content": question})
        ids = cached.apply_chat_template(messages)
        out = cached.generate(ids, SamplingParams(max_tokens=reply_tokens))[0]
        no_cache = plain.generate(ids, SamplingParams(max_tokens=1))[0].metrics.ttft_s
        hf_ttft = hf_generate_s(hf, ids, 1)
        m = out.metrics
        rows.append([str(turn), str(len(ids)), str(m.cached_tokens), m.ttft_s * 1000, no_cache * 1000,
                     hf_ttft * 1000, f"{hf_ttft / m.ttft_s:.1f}x", f"{no_cache / m.ttft_s:.1f}x"])
        messages.append({"role": "assistant", "content": out.text})
    print(table(f"\nAgent workload: ~2,000-token shared context, 5 turns, {model}, {dtype}, {threads} threads "
                "(TTFT in ms)", ["turn", "prompt", "cached", "ours+cache", "ours no-cache", "HF generate",
                                 "HF/ours+cache", "no-cache/cache"], rows), flush=True)
    s = cached.stats()
    print(f"prefix cache: {s.prefix_cache_hits:,} of {s.prefix_cache_queries:,} prompt tokens served from cache "
          f"({s.prefix_cache_hits / max(1, s.prefix_cache_queries):.0%})")

    # throughput: 8 different prompts x 128 new tokens, concurrently vs one at a time
    tp = Engine.from_pretrained(model, dtype=dtype, enable_prefix_caching=False, speculative=False)
    text = tp.tokenizer.decode(synthetic_prompt(tp, 8 * 60))
    prompts = [tp.tokenizer(text[i * 200:(i + 1) * 200])["input_ids"] for i in range(8)]
    params = SamplingParams(max_tokens=128, ignore_eos=True)
    t = time.perf_counter()
    one = [tp.generate(p, params)[0] for p in prompts]
    t_one = time.perf_counter() - t
    t = time.perf_counter()
    batch = tp.generate(prompts, params)
    t_batch = time.perf_counter() - t
    same = sum(a.token_ids == b.token_ids for a, b in zip(one, batch, strict=True))
    n = sum(len(o.token_ids) for o in batch)
    d_one = sum(o.metrics.decode_passes for o in one) / sum(o.metrics.decode_s for o in one)
    d_batch = sum(o.metrics.decode_passes for o in batch) / max(o.metrics.decode_s for o in batch)
    rows = [
        ["end-to-end tok/s", n / t_one, n / t_batch, f"{t_one / t_batch:.2f}x"],
        ["aggregate decode tok/s", d_one, d_batch, f"{d_batch / d_one:.2f}x"],
    ]
    print(table(f"\nThroughput: 8 requests x 128 new tokens ({same}/8 identical outputs)",
                ["", "one at a time", "8 concurrent", "ratio"], rows), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.engine_vs_hf", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("which", choices=["engine", "prefix", "all"], nargs="?", default="all")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--dtype", default="bfloat16,float32", help="comma-separated; prefix uses the first")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)


def run(args) -> int:
    dtypes = [d.strip() for d in args.dtype.split(",") if d.strip()]
    if args.which in ("engine", "all"):
        bench_engine(args.model, dtypes, args.threads, args.repeats)
    if args.which in ("prefix", "all"):
        bench_prefix(args.model, dtypes[0], args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
