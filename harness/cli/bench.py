"""`deltaserve bench engine|prefix|all`: the engine benchmarks (engine/bench.py), side by side with HF."""

from __future__ import annotations


def register(subparsers) -> None:
    from engine.bench import add_arguments, run

    parser = subparsers.add_parser("bench", help="engine benchmarks: ours vs HF generate, prefix cache, batching")
    add_arguments(parser)
    parser.set_defaults(func=run)
