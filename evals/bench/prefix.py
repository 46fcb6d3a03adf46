"""The agent workload: per-turn TTFT of a 5-turn chat over a ~2,000-token shared context, ours with the
prefix cache vs ours without it vs HF generate(); then 8 requests decoded concurrently vs one at a time.
Printed side by side with ratios (not a test: the numbers depend on the machine).

    deltaserve bench prefix [--dtype bfloat16] [--threads 2]
    python -m deltaserve.evals.bench.prefix [same options]
"""

from __future__ import annotations

import argparse
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

AGENT_TASK = ("You are a coding assistant working on the file below. Answer briefly and precisely, "
              "quoting line numbers when you refer to code.\n\n")
TURNS = [
    "What does this file do, in two sentences?",
    "Which function would you change to add a new model architecture?",
    "Is there any input that could make the forward pass fail?",
    "Suggest one test for the attention code.",
    "Summarise our discussion in one line.",
]
CONCURRENT = 8


def agent_messages(eng: Engine, context_tokens: int) -> list[dict]:
    code = eng.tokenizer.decode(synthetic_prompt(eng, context_tokens))
    return [{"role": "system", "content": AGENT_TASK + code}]


def agent_turns(model: str, dtype: str, threads: int, reply_tokens: int) -> None:
    """TTFT of each turn: ours with the cache, ours without, HF generate()."""
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
    header = ["turn", "prompt", "cached", "ours+cache", "ours no-cache", "HF generate", "HF/ours+cache",
              "no-cache/cache"]
    title = f"\nAgent workload: ~2,000-token shared context, 5 turns, {model}, {dtype}, {threads} threads"
    print(table(title + " (TTFT in ms)", header, rows), flush=True)
    s = cached.stats()
    print(f"prefix cache: {s.prefix_cache_hits:,} of {s.prefix_cache_queries:,} prompt tokens served from "
          f"cache ({s.prefix_cache_hits / max(1, s.prefix_cache_queries):.0%})")


def throughput(model: str, dtype: str, new_tokens: int = 128) -> None:
    """CONCURRENT different prompts x new_tokens, one batch vs one at a time."""
    tp = Engine.from_pretrained(model, dtype=dtype, enable_prefix_caching=False, speculative=False)
    text = tp.tokenizer.decode(synthetic_prompt(tp, CONCURRENT * 60))
    prompts = [tp.tokenizer(text[i * 200:(i + 1) * 200])["input_ids"] for i in range(CONCURRENT)]
    params = SamplingParams(max_tokens=new_tokens, ignore_eos=True)
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
    title = f"\nThroughput: {CONCURRENT} requests x {new_tokens} new tokens"
    title += f" ({same}/{CONCURRENT} identical outputs)"
    print(table(title, ["", "one at a time", f"{CONCURRENT} concurrent", "ratio"], rows), flush=True)


def bench_prefix(model: str, dtype: str, threads: int, reply_tokens: int = 32) -> None:
    torch.set_num_threads(threads)
    agent_turns(model, dtype, threads, reply_tokens)
    throughput(model, dtype)


add_arguments = add_engine_arguments


def run(args: argparse.Namespace) -> int:
    bench_prefix(args.model, dtype_list(args.dtype)[0], args.threads)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.prefix",
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
