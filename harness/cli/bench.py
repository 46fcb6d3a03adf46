"""`deltaserve bench engine|prefix|all|spec`: the engine benchmarks (engine/bench.py), side by side with HF;
`spec`: speculative decoding off vs on (engine/bench_speculative.py)."""

from __future__ import annotations


def register(subparsers) -> None:
    from engine.bench import add_arguments, run

    parser = subparsers.add_parser("bench", help="engine benchmarks: ours vs HF generate, prefix cache, batching")
    add_arguments(parser)
    from engine import bench_speculative  # `deltaserve bench spec`: speculation off vs on (issue 8)

    bench_speculative.add_spec_arguments(parser)
    parser.set_defaults(func=lambda args: bench_speculative.run(args) if args.which == "spec" else run(args))
