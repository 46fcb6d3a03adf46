"""`deltaserve bench BENCH`: benchmarks that print their figures side by side,
with ratios.

- engine:   ours (bf16, int8, int4 weights) vs llama.cpp on the same GGUF and
            HF generate() (evals/bench/engine_vs_hf.py): prefill tok/s and
            decode ms/token at short and long context, both bundled models.
- accuracy: int8/int4 weights against bf16 from the same weights: greedy token
            agreement over code prompts and perplexity on a fixed text
            (evals/bench/quant_accuracy.py).
- prefix:   the agent workload (per-turn TTFT with/without prefix caching vs
            HF) and batched throughput (evals/bench/prefix.py).
- spec:     speculative decoding off vs on over teacher-forced edit replies
            (evals/bench/speculative.py).
- load:     a bounded load run with disconnects against a real `deltaserve
            serve` (evals/bench/load.py).
- kv-disk:  a long prompt in a new process that finds the first one's KV
            blocks on disk: TTFT vs cold, cached share, same greedy output
            (evals/bench/kv_disk.py).
- sandbox:  the bundled tasks' test runs without and with the bwrap sandbox
            (evals/bench/sandbox_overhead.py).
- replay:   a git repository's real commits written as model replies in each
            edit format, applied by our tools and compared with the commit
            byte for byte (evals/bench/replay_commits.py).
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass

from deltaserve.cli import COMMANDS, wrapped
from deltaserve.cli.model_names import engine_model

EPILOG = """examples:
  deltaserve bench engine                     # ours vs llama.cpp and HF
  deltaserve bench engine --model smollm2-135m --ours fp32,bf16
  deltaserve bench accuracy                   # int8/int4 vs bf16
  deltaserve bench prefix                     # 5-turn agent workload + batch
  deltaserve bench spec --threads 1           # speculation off vs on
  deltaserve bench load --tiny                # 200 streams, 20% disconnects
  deltaserve bench kv-disk --prompt-tokens 4000   # B reuses A's KV from disk
  deltaserve bench sandbox --repeats 5        # each task's tests, none vs bwrap
  deltaserve bench replay --repo ~/src/project    # 200 commits, every format
"""


def named(run):
    """`run` with --model (a name, or a comma-separated list) read by the one naming rule first: `local/`
    dropped, a name no engine loads refused with the list of what works."""
    def with_names(args) -> int:
        if isinstance(getattr(args, "model", None), str):
            args.model = ",".join(engine_model(m.strip()) for m in args.model.split(",") if m.strip())
        return run(args)
    return with_names


@dataclass(frozen=True)
class Bench:
    """A bench of deltaserve.evals.bench: its module (imported only when the bench is run: most import
    torch) gives `add_arguments` and the runner."""

    help: str
    module: str
    runner: str = "run"
    models: bool = True  # its --model is read by the one naming rule (`named`)
    described: bool = False  # its module's docstring opens its --help

    def build(self, p: argparse.ArgumentParser) -> None:
        bench = importlib.import_module(f"deltaserve.evals.bench.{self.module}")
        if self.described:
            p.description = wrapped(bench.__doc__)
        bench.add_arguments(p)
        run = getattr(bench, self.runner)
        exit_code = lambda args: code if isinstance(code := run(args), int) else 0  # noqa: E731
        p.set_defaults(func=named(exit_code) if self.models else exit_code)


BENCHES = {
    "engine": Bench("ours (bf16/int8/int4) vs llama.cpp and HF: prefill, decode speed", "engine_vs_hf"),
    "accuracy": Bench("int8/int4 weights vs bf16: greedy agreement and perplexity", "quant_accuracy",
                      "run_args"),
    "prefix": Bench("agent workload TTFT per turn (cache on/off vs HF) and throughput", "prefix"),
    "spec": Bench("speculative decoding off vs on: decode passes and seconds", "speculative"),
    "load": Bench("bounded load run with disconnects against `deltaserve serve`", "load", models=False),
    "kv-disk": Bench("a new process reuses the KV blocks an earlier one left on disk", "kv_disk",
                     "bench_kv_disk"),
    "sandbox": Bench("the bundled tasks' test runs without and with the bwrap sandbox", "sandbox_overhead",
                     models=False),
    "replay": Bench("a repository's commits as model replies, applied by each format", "replay_commits",
                    models=False, described=True),
}


def register(subparsers, argv=()) -> None:
    """`bench` and its benches; only the one named in `argv` gets its options (and imports its module):
    the others carry their help line, so `deltaserve bench --help` imports no torch."""
    parser = subparsers.add_parser(
        "bench", help=COMMANDS["bench"],
        description=__doc__, epilog=EPILOG)
    benches = parser.add_subparsers(dest="bench", metavar="BENCH")
    for name, bench in BENCHES.items():
        p = benches.add_parser(name, help=bench.help)
        if name in argv:
            bench.build(p)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
