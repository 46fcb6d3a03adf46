"""`deltaserve fix PATH --task "..."`: run the bug-fixing agent on a project directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FIX_EXAMPLES = """examples:
  deltaserve fix path/to/repo --task "parse_date('2024-02-30') should raise ValueError"
  deltaserve fix . --task "fix the failing test" --test-cmd "python -m pytest -q tests/test_dates.py" --copy
  deltaserve fix . --task "..." --model openai/smollm2-135m --api-base http://127.0.0.1:8000/v1   # deltaserve serve
  deltaserve fix . --task "..." --model anthropic/claude-3-5-haiku-latest --format search_replace --trace run.jsonl

A git checkout with uncommitted changes is refused unless --copy or --allow-dirty is given.
Exit code: 0 when the tests pass, 1 when they still fail, 2 for bad arguments."""


def register(subparsers) -> None:
    from deltaserve.cli import wrapped
    from deltaserve.harness import formats

    p = subparsers.add_parser("fix", help="fix a failing test with an edit-by-diff agent; report tokens saved",
                              description=wrapped(
                                  "Run the bug-fixing agent on a project directory: it runs the tests, asks the "
                                  "model for edits (a diff by default), applies them all-or-nothing, reruns the "
                                  "tests, and prints per step the prompt tokens served from cache (prefill saved) "
                                  "and the decode tokens saved against re-typing whole files."),
                              epilog=FIX_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", type=Path, help="project directory (the workspace the agent may edit)")
    p.add_argument("--task", required=True, help="what to fix, in words")
    p.add_argument("--test-cmd", default=None, metavar="CMD",
                   help="test command run in PATH (default: python -m pytest -q -x)")
    p.add_argument("--model", default="local/smollm2-135m",
                   help="litellm model string; local/<name> runs the in-process engine (default: %(default)s)")
    p.add_argument("--api-base", default=None, metavar="URL",
                   help="OpenAI-compatible base URL (e.g. a deltaserve or vLLM server)")
    p.add_argument("--format", default=formats.DEFAULT, choices=formats.names(), help="edit format (default: udiff)")
    p.add_argument("--max-steps", type=int, default=6, metavar="N", help="model calls at most (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                   help="tokens per reply at most (default: %(default)s)")
    p.add_argument("--trace", type=Path, default=None, metavar="FILE",
                   help="write one JSON line per step (a StepReport) to FILE")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads for a local/ model's engine (default: torch's; 1 is steadier on a busy box)")
    p.add_argument("--dry-run", action="store_true", help="show the first applicable edits without writing them")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--allow-dirty", action="store_true", help="edit a git checkout with uncommitted changes")
    where.add_argument("--copy", action="store_true", help="work on a temporary copy of PATH")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from deltaserve.harness.agent import Agent
    from deltaserve.harness.workspace_guard import DirtyWorkspaceError, check_clean, make_copy

    if not args.path.is_dir():
        print(f"deltaserve fix: {args.path} is not a directory", file=sys.stderr)
        return 2
    if args.max_steps < 1 or args.max_tokens < 1 or (args.threads is not None and args.threads < 1):
        print("deltaserve fix: --max-steps, --max-tokens and --threads must be at least 1", file=sys.stderr)
        return 2
    if not (args.allow_dirty or args.copy):
        try:  # before anything slow (loading a model, running the tests)
            check_clean(args.path)
        except DirtyWorkspaceError as exc:
            print(f"deltaserve fix: {exc}", file=sys.stderr)
            return 2
    if args.model.startswith("local/"):  # load it now: a wrong name is a clear error, not a failed first step
        from deltaserve.engine.errors import EngineError
        from deltaserve.harness.client import local_engine

        try:
            local_engine(args.model.removeprefix("local/"),
                         **({"num_threads": args.threads} if args.threads else {}))  # built once, with this setting
        except (EngineError, ValueError, OSError) as exc:
            print(f"deltaserve fix: cannot load {args.model}: {exc}", file=sys.stderr)
            return 2
    workspace = make_copy(args.path) if args.copy else args.path
    if args.copy:
        print(f"working on a copy: {workspace}")
    agent = Agent(workspace, args.task, test_cmd=args.test_cmd, model=args.model, edit_format=args.format,
                  max_steps=args.max_steps, max_tokens=args.max_tokens, api_base=args.api_base,
                  dry_run=args.dry_run, allow_dirty=args.allow_dirty or args.copy,  # a copy is ours to edit
                  trace=args.trace)
    try:
        report = agent.run()
    except DirtyWorkspaceError as exc:
        print(f"deltaserve fix: {exc}", file=sys.stderr)
        return 2
    return 0 if report.solved or (args.dry_run and report.steps) else 1
