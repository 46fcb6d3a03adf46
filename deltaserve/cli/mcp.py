"""`deltaserve mcp --root DIR`: serve the workspace tools (view, grep, list_files, apply_patch,
apply_search_replace, write_file, run_tests, localize, savings) over MCP on stdio, each edit priced in
decode tokens with the --tokenizer against the harness's `whole` reply."""

from __future__ import annotations

import argparse
import sys

from deltaserve.cli import COMMANDS, add_sandbox_option, default, wrapped
from deltaserve.cli.model_names import engine_model
from deltaserve.engine import EngineConfig
from deltaserve.errors import ModelNotFoundError
from deltaserve.harness.formats import whole
from deltaserve.harness.tokens import TokenCounter, read_tokenizer, tokenizer_file
from deltaserve.tools.edit_accounting import EditAccounting
from deltaserve.tools.mcp_server import serve
from deltaserve.tools.sandbox import choose
from deltaserve.tools.tests import DEFAULT_COMMAND
from deltaserve.tools.workspace import Workspace

MCP_EXAMPLES = """examples:
  deltaserve mcp --root path/to/repo
  deltaserve mcp --root . --test-cmd "python -m pytest -q -x tests/unit" \\
      --test-timeout 120
  deltaserve mcp --root . --tokenizer path/to/model-dir  # your model's tokens

in an MCP client's configuration (e.g. Claude Desktop's mcpServers):
  {"deltaserve": {"command": "deltaserve",
                  "args": ["mcp", "--root", "/abs/path/to/repo"]}}

It speaks MCP on stdin/stdout: run it from an MCP client, not by hand."""

DESCRIPTION = ("Serve the workspace tools (view, grep, list_files, apply_patch, apply_search_replace, "
               "write_file, run_tests) to another agent over MCP on stdio. Every path is resolved inside "
               "--root (no '..', absolute paths, outside symlinks or .git/); patches apply all-or-nothing. "
               "Each edit's result says its decode tokens, those of the whole-file reply it replaces and "
               "the tokens saved; the savings tool returns the totals since the server started.")


def register(subparsers) -> None:
    p = subparsers.add_parser("mcp", help=COMMANDS["mcp"],
                              description=wrapped(DESCRIPTION),
                              epilog=MCP_EXAMPLES)
    p.add_argument("--root", default=".", metavar="DIR",
                   help="workspace root; every tool path is resolved inside it (default: the current "
                        "directory)")
    p.add_argument("--test-cmd", default=None, metavar="CMD",
                   help="command run_tests runs in DIR when the caller gives none "
                        "(default: python -m pytest -q)")
    p.add_argument("--test-command", dest="test_cmd", help=argparse.SUPPRESS)  # the old spelling
    p.add_argument("--test-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="run_tests kills the test process group after this long (default: %(default)s)")
    p.add_argument("--tokenizer", default=default(EngineConfig, "model"), metavar="MODEL",
                   help="the model whose tokenizer the decode accounting counts with, named as for "
                        "serve (a bundled name or local/<name>, a model dir, a hub id in the HF cache); "
                        "never downloaded (default: %(default)s)")
    add_sandbox_option(p)
    p.set_defaults(func=run, error_exit=2)


def edit_accounting(tokenizer: str) -> EditAccounting:
    """The harness's token counter for `tokenizer` and its `whole` renderer, so an edit's figures match the
    agent's own step reports. Its file is found now (none stops the start) and read when the first edit is
    priced (0.3 s for the 1.5B model's, holding the GIL: on a thread it would delay the handshake all the
    same), so the server answers its client at once: Codex sends its first turn with the tools of the MCP
    servers that answered within about a second."""
    path = tokenizer_file(tokenizer)
    if path is None:
        raise ModelNotFoundError(f"no tokenizer {tokenizer!r} here (a bundled model name or a local model "
                                 "dir; nothing is downloaded)")

    def count(text: str) -> int:
        return TokenCounter(tokenizer, read_tokenizer(path)).count(text)  # read once (lru_cache)

    return EditAccounting(count, whole.render, tokenizer=tokenizer)


def run(args) -> int:
    if args.test_timeout <= 0:
        print("deltaserve mcp: --test-timeout must be more than 0 seconds", file=sys.stderr)
        return 2
    if sys.stdin.isatty():  # someone ran it by hand: say why nothing seems to happen
        print("deltaserve mcp: speaking MCP on stdin/stdout; start it from an MCP client (Ctrl-C stops it)",
              file=sys.stderr)
    Workspace(args.root)  # a bad root fails now, before the tokenizer takes seconds to load
    choose(args.sandbox)  # so does a bwrap asked for but unusable here (SandboxError)
    accounting = edit_accounting(engine_model(args.tokenizer))
    serve(args.root, args.test_cmd or DEFAULT_COMMAND, args.test_timeout, accounting,
          args.sandbox)  # errors: exit 2
    return 0
