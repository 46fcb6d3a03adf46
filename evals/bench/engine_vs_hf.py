"""Our engine (bf16, int8 and int4 weights) vs llama.cpp on the same GGUF and HF generate(), batch 1, greedy,
same threads: prefill tok/s of a 2,000-token prompt and decode ms/token at ~50 and ~2,000 tokens of context,
printed side by side with the ratios (not a test: the numbers depend on the machine).

    deltaserve bench engine [--model smollm2-135m,qwen2.5-coder-1.5b] [--ours bf16,int8,int4] [--threads 2]
                            [--group-sizes 32,64]
    python -m deltaserve.evals.bench.engine_vs_hf [same options]

Each of our variants is loaded alone (the 1.5B model's three would not fit in memory together) and measured
`--repeats` times, interleaved with llama.cpp and HF in the same rounds so that background load hits all of
them; every figure is a median. llama.cpp is skipped (with a note) when llama-cpp-python is not installed or
the model is not a GGUF; HF runs where it is cheap (`--hf auto`: checkpoints up to 1 GB). A variant this
machine cannot run (w8a8 without fbgemm) is reported as such. After the timed rounds, each of our variants
and llama.cpp run once more in a process of their own (evals/bench/engine_memory.py: load, prefill the
2,000-token prompt, decode 32) for their peak resident memory and load time (ours from the converted-weights
cache by then: a second start's).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from deltaserve.engine import Engine, EngineError, ModelNotFoundError, SamplingParams
from deltaserve.engine.loader import resolve_model_dir
from deltaserve.evals.bench.engine_memory import engine_kwargs, measure_in_child
from deltaserve.evals.bench.llama_cpp import open_llama_cpp
from deltaserve.evals.bench.reference import hf_generate_s, hf_model, synthetic_prompt
from deltaserve.evals.bench.table import table

DECODE_TOKENS = 32
SHORT, LONG = 50, 2000
HF_AUTO_MAX_BYTES = 1 << 30  # --hf auto: HF generate() for checkpoints up to this size
# our variants: name -> EngineConfig settings
VARIANTS = {
    "fp32": {"dtype": "float32", "quant": "none"},
    "bf16": {"dtype": "bfloat16", "quant": "none"},
    "int8": {"dtype": "bfloat16", "quant": "int8"},  # the LM head int8 too (its auto)
    "int4": {"dtype": "bfloat16", "quant": "int4"},  # the LM head int8 (its auto)
    "int4-bf16-head": {"dtype": "bfloat16", "quant": "int4", "quant_lm_head": "none"},
    "int4-head": {"dtype": "bfloat16", "quant": "int4", "quant_lm_head": "int4"},
    "int4-fp32": {"dtype": "float32", "quant": "int4"},  # for CPUs that emulate bf16
    "w8a8": {"dtype": "auto", "quant": "w8a8"},  # int8 weights and activations (fbgemm), the LM head int8
    "deterministic": {"deterministic": True},  # batch- and cache-invariant: float32, fixed summation orders
    "default": {},  # EngineConfig's choice for this machine (engine/quant.py: default_dtype, preferred_quant)
    "compiled": {"compile_decode": "on"},  # default, batch-1 decode compiled (engine/compiled_decode.py)
}
DEFAULT_MODELS = "smollm2-135m,qwen2.5-coder-1.5b"


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


def variant_plan(variants: list[str], group_sizes: list[int] | None) -> list[tuple[str, int | None]]:
    """(variant, int4 group size) pairs to measure: each int4 variant once per group size, the others once
    (None: the engine's default group size)."""
    return [(v, g) for v in variants for g in (group_sizes if group_sizes and "int4" in v else [None])]


def variant_name(variant: str, group_size: int | None) -> str:
    return variant if group_size is None else f"{variant} g{group_size}"


def variant_settings(variant: str, group_size: int | None) -> dict:
    """EngineConfig settings of one planned variant (its group size, where one is given)."""
    return {**VARIANTS[variant], **({} if group_size is None else {"quant_group_size": group_size})}


def load_ours(model: str, variant: str, group_size: int | None = None) -> Engine:
    # one 2,000-token request's KV, plain batch-1 decode, like the others
    return Engine.from_pretrained(model, **variant_settings(variant, group_size), **engine_kwargs(LONG))


class Samples:
    """Per column: prefill tok/s (long prompt) and decode ms/token (short and long context) samples."""

    def __init__(self):
        self.values: dict[tuple[str, str], list[float]] = {}

    def add(self, column: str, short: tuple[float, float], long: tuple[float, float]) -> None:
        for key, value in (("pf", long[0]), ("d50", short[1]), ("d2k", long[1])):
            self.values.setdefault((column, key), []).append(value)

    def median(self, column: str, key: str) -> float | None:
        got = self.values.get((column, key))
        return statistics.median(got) if got else None


def measure_round(samples: Samples, runners: dict, short: list[int], long: list[int]) -> None:
    """One round: every runner on the short then the long prompt, one after the other."""
    for column, run in runners.items():
        samples.add(column, run(short), run(long))


def hf_wanted(model: str, mode: str) -> bool:
    if mode != "auto":
        return mode == "on"
    size = sum(f.stat().st_size for f in resolve_model_dir(model).glob("*.safetensors"))
    return size <= HF_AUTO_MAX_BYTES


def bench_model(model: str, variants: list[str], threads: int, repeats: int, hf_mode: str,
                group_sizes: list[int] | None = None, memory_mode: bool = True) -> None:
    torch.set_num_threads(threads)
    notes: list[str] = []
    refs: dict = {}
    lcpp, why = open_llama_cpp(model, threads)
    if lcpp is None:
        notes.append(f"llama.cpp skipped: {why}")
    else:
        refs["llama.cpp"] = lambda ids: lcpp.prefill_decode(ids, DECODE_TOKENS)
    hf = hf_model(model, "bfloat16") if hf_wanted(model, hf_mode) else None
    if hf is not None:
        refs["HF bf16"] = lambda ids: hf_prefill_decode(hf, ids)
    samples, weights_mb, settings, long = Samples(), {}, {}, None
    for variant, group_size in variant_plan(variants, group_sizes):
        column = f"ours {variant_name(variant, group_size)}"
        try:
            eng = load_ours(model, variant, group_size)
        except EngineError as exc:  # e.g. w8a8 where fbgemm does not run
            if isinstance(exc, ModelNotFoundError):
                raise
            notes.append(f"{column}: not supported here: {exc.message}")
            continue
        settings[column] = variant_settings(variant, group_size)
        decode_bytes, kept_bytes = eng.model.weight_bytes()
        weights_mb[column] = f"{decode_bytes / 2**20:,.0f} / {kept_bytes / 2**20:,.0f}"
        short, long = synthetic_prompt(eng, SHORT), synthetic_prompt(eng, LONG)
        runners = {column: lambda ids, eng=eng: ours_prefill_decode(eng, ids), **refs}
        for run in runners.values():  # warm-up
            run(short)
        for _ in range(repeats):
            measure_round(samples, runners, short, long)
        del eng, runners
        gc.collect()
    if lcpp is not None:
        lcpp.close()
        settings["llama.cpp"] = None
    memory = measure_memory(model, settings, long, threads) if memory_mode and long else {}
    print_tables(model, threads, repeats, samples, weights_mb, notes, memory)


def measure_memory(model: str, settings: dict, ids: list[int], threads: int) -> dict[str, dict | str]:
    """column -> {"load_s", "peak_rss_mb"} (or why not), each from a process of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        ids_file = Path(tmp) / "ids.json"
        ids_file.write_text(json.dumps(ids))
        return {column: measure_in_child(model, ids_file, threads, s) for column, s in settings.items()}


def print_tables(model: str, threads: int, repeats: int, samples: Samples, weights_mb: dict,
                 notes: list[str], memory: dict | None = None) -> None:
    columns = list(dict.fromkeys(c for c, _ in samples.values))
    columns = [c for c in columns if c.startswith("HF")] + [c for c in columns if not c.startswith("HF")]
    rows = []
    for label, key in (("prefill tok/s (2,000-token prompt)", "pf"), ("decode ms/token at ~50 ctx", "d50"),
                       ("decode ms/token at ~2,000 ctx", "d2k")):
        rows.append([label] + [_cell(samples.median(c, key)) for c in columns])
    rows.append(["weights MB: read per token / held"] + [weights_mb.get(c, "") for c in columns])
    memory = memory or {}
    for label, key, fmt in (("peak resident MB (load, prefill 2,000, decode 32)", "peak_rss_mb", "{:,.0f}"),
                            ("load s (a new process; ours: weights cached)", "load_s", "{:.1f}")):
        got = [memory.get(c) for c in columns]
        if any(isinstance(m, dict) for m in got):
            rows.append([label] + [fmt.format(m[key]) if isinstance(m, dict) else "" for m in got])
    notes = notes + [f"{c}: memory run failed: {m}" for c, m in memory.items() if isinstance(m, str)]
    print(table(f"\n{model}, batch 1, greedy, {threads} threads, median of {repeats} (ours each with the "
                f"references of its rounds)", [""] + columns, rows), flush=True)
    ours = [c for c in columns if c.startswith("ours")]
    for ref in [c for c in columns if not c.startswith("ours")]:
        ratio_rows = []
        for label, key in (("prefill", "pf"), ("decode at ~50 ctx", "d50"), ("decode at ~2,000 ctx", "d2k")):
            r = samples.median(ref, key)
            vals = [samples.median(c, key) for c in ours]
            ratio_rows.append([label] + [_ratio(v, r, key) for v in vals])
        print(table(f"speed of ours over {ref} (> 1: ours faster)", [""] + ours, ratio_rows), flush=True)
    for note in notes:
        print(note)


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _ratio(ours: float | None, ref: float | None, key: str) -> str:
    if ours is None or ref is None:
        return "-"
    return f"{(ours / ref if key == 'pf' else ref / ours):.2f}x"  # tok/s: ours/ref; ms/token: ref/ours


def bench_engine(models: list[str], variants: list[str], threads: int, repeats: int, hf_mode: str,
                 group_sizes: list[int] | None = None, memory_mode: bool = True) -> None:
    for model in models:
        try:
            bench_model(model, variants, threads, repeats, hf_mode, group_sizes, memory_mode)
        except ModelNotFoundError as exc:
            print(f"\n{model}: skipped, {exc.message}", flush=True)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default=DEFAULT_MODELS,
                        help="comma-separated model names or paths (default: %(default)s)")
    parser.add_argument("--ours", default="default,int4,w8a8",
                        help=f"our variants to measure, comma-separated from {', '.join(VARIANTS)} "
                             "(default: the engine's own choice for this machine; int8/int4: bf16 "
                             "activations with those weights and an int8 LM head with 8-bit activations; "
                             "int4-bf16-head / int4-head: int4 layers, the LM head bf16 / int4; int4-fp32: "
                             "int4 with float32 activations; w8a8: int8 weights and per-row int8 "
                             "activations; compiled: default with batch-1 decode through torch.compile, "
                             "compiled during the warm-up; default: %(default)s)")
    parser.add_argument("--group-sizes", default=None, metavar="G,G",
                        help="int4 group sizes for each int4 variant, comma-separated from 32, 64, 128, 256 "
                             "(default: the engine's, EngineConfig.quant_group_size)")
    parser.add_argument("--hf", choices=["auto", "on", "off"], default="auto",
                        help="HF generate() column: auto = for checkpoints up to 1 GB (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads for all of them (default: %(default)s)")
    parser.add_argument("--memory", choices=["on", "off"], default="on",
                        help="peak resident memory and load time of each column, one new process each "
                             "(default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed rounds per variant, the median is shown (default: %(default)s)")


def comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def run(args) -> int:
    variants = comma_list(args.ours)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        print(f"unknown --ours variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}",
              file=sys.stderr)
        return 2
    group_sizes = [int(g) for g in comma_list(args.group_sizes)] if args.group_sizes else None
    bench_engine(comma_list(args.model), variants, args.threads, args.repeats, args.hf, group_sizes,
                 args.memory == "on")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.engine_vs_hf",
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
