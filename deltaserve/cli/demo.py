"""`deltaserve demo`: the agent on one example bug with its live savings table, then the quick decode-cost
eval."""

from __future__ import annotations

from pathlib import Path

from deltaserve.cli import COMMANDS, default
from deltaserve.evals.demo import DEMO_TASK, DemoConfig, run_demo


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help=COMMANDS["demo"])
    parser.add_argument("--model", default=default(DemoConfig, "model"),
                        help="engine model: bundled name, HF dir or .gguf (default: %(default)s)")
    parser.add_argument("--task",
                        help=f"example task id (default: {DEMO_TASK}, a one-line bug in a real-sized file)")
    parser.add_argument("--format", default=default(DemoConfig, "edit_format"),
                        help="the agent's edit format (default: %(default)s)")
    parser.add_argument("--max-steps", type=int, default=default(DemoConfig, "max_steps"))
    parser.add_argument("--max-tokens", type=int, default=default(DemoConfig, "max_tokens"),
                        help="max tokens per agent reply (default: %(default)s)")
    parser.add_argument("--candidates", type=int, default=default(DemoConfig, "candidates"),
                        help="replies per agent step (default: %(default)s)")
    parser.add_argument("--no-agent", action="store_true", help="skip the agent run")
    parser.add_argument("--no-eval", action="store_true", help="skip the decode-cost eval")
    parser.add_argument("--threads", type=int, help="CPU threads for the engine (default: the engine's)")
    parser.add_argument("--out", type=Path, help="output dir (default: runs/demo-<time>)")
    parser.set_defaults(func=run)


def run(args) -> int:
    config = DemoConfig(model=args.model, task_id=args.task, edit_format=args.format,
                        max_steps=args.max_steps, max_tokens=args.max_tokens, candidates=args.candidates,
                        run_agent=not args.no_agent,
                        run_eval=not args.no_eval, out_dir=args.out, threads=args.threads)
    run_demo(config)
    return 0
