"""`deltaserve fix PATH --task "..."`: run the bug-fixing agent on a project directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers) -> None:
    from harness import formats

    p = subparsers.add_parser("fix", help="fix a failing test with an edit-by-diff agent; report tokens saved",
                              description=__doc__)
    p.add_argument("path", type=Path, help="project directory (the workspace the agent may edit)")
    p.add_argument("--task", required=True, help="what to fix, in words")
    p.add_argument("--test-cmd", default=None, help="test command run in PATH (default: python -m pytest -q -x)")
    p.add_argument("--model", default="local/smollm2-135m",
                   help="litellm model string; local/<name> runs the in-process engine (default: %(default)s)")
    p.add_argument("--api-base", default=None, help="OpenAI-compatible base URL (e.g. a deltaserve or vLLM server)")
    p.add_argument("--format", default=formats.DEFAULT, choices=formats.names(), help="edit format (default: udiff)")
    p.add_argument("--max-steps", type=int, default=6, help="model calls at most (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=1024, help="tokens per reply at most (default: %(default)s)")
    p.add_argument("--trace", type=Path, default=None, help="write one JSON line per step here")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for a local/ model's engine (default: torch's; 1 is steadier on a busy box)")
    p.add_argument("--dry-run", action="store_true", help="show the first applicable edits without writing them")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--allow-dirty", action="store_true", help="edit a git checkout with uncommitted changes")
    where.add_argument("--copy", action="store_true", help="work on a temporary copy of PATH")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from harness.agent import Agent
    from harness.workspace_guard import DirtyWorkspaceError, make_copy

    if not args.path.is_dir():
        print(f"deltaserve fix: {args.path} is not a directory", file=sys.stderr)
        return 2
    if args.max_steps < 1 or args.max_tokens < 1 or (args.threads is not None and args.threads < 1):
        print("deltaserve fix: --max-steps, --max-tokens and --threads must be at least 1", file=sys.stderr)
        return 2
    if args.threads is not None and args.model.startswith("local/"):
        from harness.client import local_engine

        local_engine(args.model.removeprefix("local/"), num_threads=args.threads)  # built once, with this setting
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
