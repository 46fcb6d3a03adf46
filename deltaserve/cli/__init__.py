"""`deltaserve` command line: one module per subcommand, each exposing `register(subparsers)`.

A subcommand module adds its parser and sets `func=` to a callable taking the parsed args and returning
an exit code. Modules are imported lazily by name so a broken optional part cannot break `--help`.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import textwrap

# Subcommand modules under deltaserve.cli, in the order `--help` lists them.
COMMANDS = ["fix", "serve", "eval", "bench", "demo", "mcp"]

EXAMPLES = """examples:
  deltaserve demo                                          # the agent on an example bug, then a quick eval
  deltaserve fix path/to/repo --task "add() returns a - b" --test-cmd "python -m pytest -q"
  deltaserve serve --model smollm2-135m --port 8000        # OpenAI-compatible server with cache hits in usage
  deltaserve mcp --root path/to/repo                       # file/patch/test tools for other agents (stdio)

`deltaserve COMMAND --help` explains each command."""


def wrapped(text: str) -> str:
    """A description filled to the terminal's width, for parsers whose epilog keeps its own line breaks
    (RawDescriptionHelpFormatter leaves both as written)."""
    width = max(40, min(100, shutil.get_terminal_size().columns - 2))
    return textwrap.fill(text, width)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deltaserve",
        description=wrapped("Make coding agents decode less: a prefix-caching local engine and an edit-by-diff "
                            "agent harness that reports prefill and decode tokens saved at every step."),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"deltaserve.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"deltaserve.cli.{name}":
                raise
            continue  # not built yet
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
