"""`deltaserve demo`: the agent on one example bug with its live savings table, then the quick decode-cost
eval."""

from __future__ import annotations

from pathlib import Path

from deltaserve.cli import COMMANDS, default
from deltaserve.cli.loading import loading_status
from deltaserve.cli.model_names import engine_model
from deltaserve.evals.decode_cost import DecodeCostConfig, load_engine
from deltaserve.evals.demo import DEMO_TASK, DemoConfig, run_demo
from deltaserve.harness import formats


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help=COMMANDS["demo"])
    parser.add_argument("--model", default=default(DemoConfig, "model"), metavar="MODEL",
                        help="the engine's model: a bundled name or local/<name>, a model dir, a .gguf, or a "
                             "hub id in the HF cache")
    parser.add_argument("--task", metavar="ID",
                        help=f"example task id (default: {DEMO_TASK}, a one-line bug in a real-sized file)")
    parser.add_argument("--format", default=default(DemoConfig, "edit_format"), choices=formats.names(),
                        help="the agent's edit format")
    parser.add_argument("--max-steps", type=int, default=default(DemoConfig, "max_steps"), metavar="N",
                        help="agent model calls at most")
    parser.add_argument("--max-tokens", type=int, default=default(DemoConfig, "max_tokens"), metavar="N",
                        help="tokens per agent reply at most")
    parser.add_argument("--candidates", type=int, default=default(DemoConfig, "candidates"), metavar="N",
                        help="replies per agent step")
    parser.add_argument("--no-agent", action="store_true", help="skip the agent run")
    parser.add_argument("--no-eval", action="store_true", help="skip the decode-cost eval")
    parser.add_argument("--threads", type=int, metavar="N",
                        help="CPU threads for the engine (default: torch's)")
    parser.add_argument("--out", type=Path, metavar="DIR", help="output dir (default: runs/demo-<time>)")
    parser.set_defaults(func=run)


def run(args) -> int:
    model = engine_model(args.model)
    config = DemoConfig(model=model, task_id=args.task, edit_format=args.format,
                        max_steps=args.max_steps, max_tokens=args.max_tokens, candidates=args.candidates,
                        run_agent=not args.no_agent,
                        run_eval=not args.no_eval, out_dir=args.out, threads=args.threads)
    with loading_status(model):
        engine = load_engine(DecodeCostConfig(model=model, threads=args.threads))
    run_demo(config, engine=engine)
    return 0
