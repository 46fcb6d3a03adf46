"""How much int8/int4 weights change a model: greedy agreement with bf16 and perplexity, same weights.

    deltaserve bench accuracy [--model smollm2-135m,qwen2.5-coder-1.5b] [--ours int8,int4,int4-head]
                              [--group-sizes 32] [--base bf16|fp32]
                              (or python -m deltaserve.evals.bench.quant_accuracy)

For each of PROMPTS (code requests, chat template applied) the unquantized model (`--base`: bf16, or fp32 on
a CPU that emulates bf16, where a bf16 pass over the text takes an hour) decodes NEW_TOKENS greedy tokens;
each quantized model then
- decodes its own greedy continuation (free-running, through the decode kernels): the share of positions
  whose token equals the base's, and the share of prompts whose whole continuation is identical;
- is fed the base's continuation (teacher forcing): the share of positions where its argmax is that token,
  i.e. per-step agreement that one early difference does not cascade (one pass over prompt + continuation).
Perplexity is over a fixed text: the engine's own source files, in chunks with fresh context each.
"""

from __future__ import annotations

import argparse
import gc
import math
import sys
from pathlib import Path

import torch

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.forward_batch import Span
from deltaserve.evals.bench.engine_vs_hf import (
    DEFAULT_MODELS,
    comma_list,
    variant_name,
    variant_plan,
    variant_settings,
)
from deltaserve.evals.bench.table import table

NEW_TOKENS = 64
PPL_CHUNK = 512
PROMPTS = [
    "Write a Python function that returns the n-th Fibonacci number iteratively.",
    "Write a Python function that checks whether a string is a palindrome, ignoring case and spaces.",
    "Implement binary search over a sorted Python list and return the index or -1.",
    "Write a JavaScript function that debounces another function.",
    "Write a SQL query that returns the five customers with the highest total order value.",
    "Write a bash script that counts the lines of every .py file under the current directory.",
    "Implement a stack class in Python with push, pop, peek and is_empty.",
    "Write a C function that reverses a null-terminated string in place.",
    "Write a Rust function that sums the even numbers in a slice of i64.",
    "Write a Python decorator that retries a function up to three times on exception.",
    "Explain what this does and fix the bug:\n\ndef mean(xs):\n    return sum(xs) / len(xs) - 1\n",
    "Write a Python function that merges two sorted lists into one sorted list.",
    "Write a Go function that reads a file and returns the number of words in it.",
    "Write a Python class for an LRU cache with get and put in O(1).",
    "Write a regular expression that matches ISO 8601 dates like 2024-05-17, and use it in Python.",
    "Write a Python function that flattens an arbitrarily nested list.",
    "Write a TypeScript interface for a user with id, name, optional email, and a list of roles.",
    "Write a Python function that parses a CSV line, honouring double-quoted fields.",
    "Write a unit test with pytest for a function add(a, b) that adds two numbers.",
    "Write a Python generator that yields prime numbers indefinitely.",
    "Write a Java method that returns the maximum value in an int array.",
    "Refactor this into a list comprehension:\n\nresult = []\nfor x in items:\n    if x > 0:\n"
    "        result.append(x * 2)\n",
    "Write a Python function that computes the Levenshtein distance between two strings.",
    "Write a Dockerfile for a small Python web app that installs requirements.txt and runs app.py.",
]


def fixed_text() -> str:
    """The engine's own source files, concatenated in name order: fixed for a given checkout."""
    engine_dir = Path(sys.modules[Engine.__module__].__file__).parent
    return "".join(p.read_text() for p in sorted(engine_dir.glob("*.py")))


def all_logits(eng: Engine, ids: list[int]) -> torch.Tensor:
    """Float32 logits at every position of one fresh pass over ids (blocks 0.. of an idle engine's pool)."""
    bs = eng.config.block_size
    span = Span(ids, 0, list(range(-(-len(ids) // bs))), list(range(len(ids))))
    return eng.runner.logits([span])


def nll_sum(eng: Engine, ids: list[int]) -> tuple[float, int]:
    """(summed negative log-likelihood, tokens predicted) over ids in PPL_CHUNK chunks."""
    total, count = 0.0, 0
    for start in range(0, len(ids) - 1, PPL_CHUNK):
        chunk = ids[start:start + PPL_CHUNK + 1]
        logp = all_logits(eng, chunk[:-1]).log_softmax(-1)
        target = torch.tensor(chunk[1:])
        total -= logp.gather(1, target[:, None]).sum().item()
        count += len(target)
    return total, count


def load(model: str, variant: str, group_size: int | None) -> Engine:
    eng = Engine.from_pretrained(model, **variant_settings(variant, group_size),
                                 enable_prefix_caching=False, speculative="off",
                                 max_model_len=PPL_CHUNK + 1024, max_num_seqs=1)
    for lin in eng.model.linears():
        if getattr(lin, "dynamic", False):  # many rows would run a dense copy, which skips the 8-bit
            lin.dense = None  # activations of decode: make perplexity and teacher forcing see them
    return eng


def evaluate(eng: Engine, prompts: list[list[int]], text_ids: list[int]) -> dict:
    params = SamplingParams(max_tokens=NEW_TOKENS, ignore_eos=True)
    # one at a time: batch-1 decode is the path the quantized kernels serve (a batch of more than
    # quant.MAX_QUANT_ROWS rows runs the dense copy)
    greedy = [eng.generate(p, params)[0].token_ids for p in prompts]
    nll, n = nll_sum(eng, text_ids)
    return {"greedy": greedy, "ppl": math.exp(nll / n)}


def forced_agreement(eng: Engine, prompts: list[list[int]], reference: list[list[int]]) -> float:
    """Share of positions where the model's argmax, fed the reference continuation, is the reference token."""
    hits = total = 0
    for prompt, ref in zip(prompts, reference, strict=True):
        logits = all_logits(eng, prompt + ref[:-1])[len(prompt) - 1:]
        hits += sum(int(a == b) for a, b in zip(logits.argmax(-1).tolist(), ref, strict=True))
        total += len(ref)
    return hits / total


def compare(greedy: list[list[int]], reference: list[list[int]]) -> tuple[float, float]:
    """(share of positions equal to the reference, share of continuations identical to it)."""
    same = sum(a == b for g, r in zip(greedy, reference, strict=True) for a, b in zip(g, r, strict=True))
    total = sum(len(r) for r in reference)
    return same / total, sum(g == r for g, r in zip(greedy, reference, strict=True)) / len(reference)


def run(model: str, variants: list[str], group_sizes: list[int], ppl_tokens: int, threads: int,
        base_variant: str = "bf16") -> None:
    torch.set_num_threads(threads)
    plan = [(base_variant, None)] + variant_plan(variants, group_sizes)
    rows, base = [], None
    for variant, group in plan:
        eng = load(model, variant, group)
        prompts = [eng.apply_chat_template([{"role": "user", "content": p}]) for p in PROMPTS]
        text_ids = eng.tokenizer(fixed_text())["input_ids"][:ppl_tokens + 1]
        res = evaluate(eng, prompts, text_ids)
        name = variant_name(variant, group)
        if base is None:
            base = res
            rows.append([name, "-", "-", "-", res["ppl"], "-"])
        else:
            positions, identical = compare(res["greedy"], base["greedy"])
            forced = forced_agreement(eng, prompts, base["greedy"])
            rows.append([name, f"{forced:.1%}", f"{positions:.1%}", f"{identical:.0%}", res["ppl"],
                         f"{res['ppl'] / base['ppl'] - 1:+.2%}"])
        del eng
        gc.collect()  # free this variant's weights before the next one loads
    print(table(f"\n{model}: {len(PROMPTS)} code prompts x {NEW_TOKENS} greedy tokens vs {base_variant}; "
                f"perplexity over {ppl_tokens:,} tokens of the engine's source",
                ["weights", "teacher-forced top-1", "free-running tokens", "identical replies", "perplexity",
                 f"vs {base_variant}"], rows), flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_MODELS, help="comma-separated model names or paths")
    parser.add_argument("--ours", default="int8,int4,int4-head",
                        help="variants compared with bf16, comma-separated (bench engine's names)")
    parser.add_argument("--group-sizes", default="32", help="int4 group sizes to compare, comma-separated")
    parser.add_argument("--ppl-tokens", type=int, default=4096, help="tokens of fixed text for perplexity")
    parser.add_argument("--threads", type=int, default=2, metavar="N", help="CPU threads for torch")
    parser.add_argument("--base", choices=["bf16", "fp32"], default="bf16",
                        help="the unquantized reference (fp32 where bf16 matmuls are emulated: much "
                             "faster there)")


def run_args(args) -> int:
    for model in comma_list(args.model):
        run(model, comma_list(args.ours), [int(g) for g in comma_list(args.group_sizes)], args.ppl_tokens,
            args.threads, args.base)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.quant_accuracy",
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
