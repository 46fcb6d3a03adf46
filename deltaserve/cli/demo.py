"""`deltaserve demo`: the agent on one example bug with its live savings table, then the quick decode-cost eval."""

from __future__ import annotations

import sys
from pathlib import Path

from deltaserve.errors import DeltaserveError


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help="the agent on an example bug, then the quick decode-cost eval")
    parser.add_argument("--model", default="smollm2-135m", help="engine model: bundled name, HF dir or .gguf")
    parser.add_argument("--task", help="example task id (default: the one with the smallest edited file)")
    parser.add_argument("--format", default="udiff", help="the agent's edit format")
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256, help="max tokens per agent reply")
    parser.add_argument("--no-agent", action="store_true", help="skip the agent run")
    parser.add_argument("--no-eval", action="store_true", help="skip the decode-cost eval")
    parser.add_argument("--threads", type=int, help="CPU threads for the engine (default: the engine's)")
    parser.add_argument("--out", type=Path, help="output dir (default: runs/demo-<time>)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from deltaserve.evals.demo import DemoConfig, run_demo

    config = DemoConfig(model=args.model, task_id=args.task, edit_format=args.format, max_steps=args.max_steps,
                        max_tokens=args.max_tokens, run_agent=not args.no_agent, run_eval=not args.no_eval,
                        out_dir=args.out, threads=args.threads)
    try:
        run_demo(config)
    except (DeltaserveError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
