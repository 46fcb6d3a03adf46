"""`deltaserve mcp --root DIR`: serve the workspace tools (view, grep, list_files, apply_patch,
apply_search_replace, write_file, run_tests) over MCP on stdio."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser("mcp", help="serve the file/patch/test tools over MCP (stdio)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=".", help="workspace root; every tool path is resolved inside it")
    p.add_argument("--test-command", default=None, help="default command for run_tests (python -m pytest -q)")
    p.add_argument("--test-timeout", type=float, default=300.0, help="upper bound in seconds for run_tests")
    p.set_defaults(func=run)


def run(args) -> int:
    from tools.mcp_server import serve
    from tools.tests import DEFAULT_COMMAND
    from tools.workspace import WorkspaceError

    try:
        serve(args.root, args.test_command or DEFAULT_COMMAND, args.test_timeout)
    except WorkspaceError as exc:
        import sys

        print(f"deltaserve mcp: {exc}", file=sys.stderr)
        return 2
    return 0
