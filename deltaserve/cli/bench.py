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

from deltaserve.cli import COMMANDS, default, wrapped
from deltaserve.cli.model_names import engine_model
from deltaserve.engine import EngineConfig
from deltaserve.evals.bench import engine_vs_hf, quant_accuracy, replay_commits, sandbox_overhead
from deltaserve.evals.bench import kv_disk as bench_kv_disk
from deltaserve.evals.bench import speculative as bench_speculative
from deltaserve.evals.bench.load import register_load
from deltaserve.evals.bench.prefix import bench_prefix

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


def _engine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=default(EngineConfig, "model"),
                   help="model name or path (default: %(default)s)")
    p.add_argument("--dtype", default="bfloat16,float32",
                   help="comma-separated dtypes to compare; prefix uses the first (default: %(default)s)")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=2, help="timed repeats, best kept (default: %(default)s)")


def named(run):
    """`run` with --model (a name, or a comma-separated list) read by the one naming rule first: `local/`
    dropped, a name no engine loads refused with the list of what works."""
    def with_names(args) -> int:
        if isinstance(getattr(args, "model", None), str):
            args.model = ",".join(engine_model(m.strip()) for m in args.model.split(",") if m.strip())
        return run(args)
    return with_names


def _run_prefix(args) -> int:
    bench_prefix(args.model, _dtypes(args)[0], args.threads)
    return 0


def _dtypes(args) -> list[str]:
    return [d.strip() for d in args.dtype.split(",") if d.strip()]


def _run_spec(args) -> int:
    return bench_speculative.run(args)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench", help=COMMANDS["bench"],
        description=__doc__, epilog=EPILOG)
    benches = parser.add_subparsers(dest="bench", metavar="BENCH")

    p = benches.add_parser("engine", help="ours (bf16/int8/int4) vs llama.cpp and HF: prefill, decode speed")
    engine_vs_hf.add_arguments(p)
    p.set_defaults(func=named(engine_vs_hf.run))

    p = benches.add_parser("accuracy", help="int8/int4 weights vs bf16: greedy agreement and perplexity")
    quant_accuracy.add_arguments(p)
    p.set_defaults(func=named(quant_accuracy.run_args))

    p = benches.add_parser("prefix", help="agent workload TTFT per turn (cache on/off vs HF) and throughput")
    _engine_options(p)
    p.set_defaults(func=named(_run_prefix))

    p = benches.add_parser("spec", help="speculative decoding off vs on: decode passes and seconds")
    bench_speculative.add_arguments(p)
    p.set_defaults(func=named(_run_spec))

    register_load(benches)
    p = benches.add_parser("kv-disk", help="a new process reuses the KV blocks an earlier one left on disk")
    bench_kv_disk.add_arguments(p)
    p.set_defaults(func=named(lambda args: bench_kv_disk.bench_kv_disk(args) and 0))

    p = benches.add_parser("sandbox", help="the bundled tasks' test runs without and with the bwrap sandbox")
    sandbox_overhead.add_arguments(p)
    p.set_defaults(func=sandbox_overhead.run)

    p = benches.add_parser("replay", help="a repository's commits as model replies, applied by each format",
                           description=wrapped(replay_commits.__doc__))
    replay_commits.add_arguments(p)
    p.set_defaults(func=replay_commits.run)
    parser.set_defaults(func=lambda args: parser.print_help() or 2)
