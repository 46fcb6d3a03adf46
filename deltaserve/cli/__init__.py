"""`deltaserve` command line: one module per subcommand, each exposing `register(subparsers)`.

A subcommand module adds its parser (with the help line from COMMANDS) and sets `func=` to a callable taking
the parsed args and returning an exit code. Only the module of the command being run is imported: the others
pull in torch, litellm or the MCP SDK, which `deltaserve --help` and `deltaserve fix` do not need. A
DeltaserveError (or OSError) a command lets through is printed here as `deltaserve COMMAND: message` and exits
with the command's `error_exit` (1 unless the command sets another).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata
import inspect
import os
import shutil
import sys
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from deltaserve.errors import DeltaserveError
from deltaserve.tools.sandbox import NAMES as SANDBOXES

# Subcommand modules under deltaserve.cli with their one-line help, in the order `--help` lists them.
COMMANDS = {
    "fix": "fix a failing test with an edit-by-diff agent; report tokens saved",
    "serve": "serve a model over an OpenAI-compatible HTTP API",
    "eval": "task suite checks, decode-cost and agent evals, reports, SWE-bench import",
    "bench": "benchmarks: ours vs HF generate, prefix cache, speculation, load",
    "demo": "the agent on an example bug, then the quick decode-cost eval",
    "mcp": "serve the file/patch/test tools over MCP (stdio)",
    "cache": "the model cache: what is in use, and --prune for the rest",
}

EXAMPLES = """examples:
  deltaserve demo                      # an example bug fixed, then a quick eval
  deltaserve fix path/to/repo --task "add() returns a - b"
  deltaserve serve --model smollm2-135m --port 8000   # OpenAI-compatible server
  deltaserve mcp --root path/to/repo   # file/patch/test tools for other agents

A model is named the same way everywhere: a bundled name (qwen2.5-coder-1.5b,
smollm2-135m), local/<name>, a model directory or .gguf file, a Hugging Face
hub id in the local cache (org/name), or, where an agent calls the model (fix,
eval agent), a litellm provider string (openai/<model>, anthropic/<model>).

`deltaserve COMMAND --help` explains each command."""


def wrapped(text: str) -> str:
    """A description filled to the terminal's width, paragraph by paragraph (blank lines between them), for
    parsers whose epilog keeps its own line breaks (HelpFormatter leaves both as written)."""
    width = max(40, min(100, shutil.get_terminal_size().columns - 2))
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width) for p in text.strip().split("\n\n"))


def version() -> str:
    try:
        return importlib.metadata.version("deltaserve")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (each fits 80 columns); every option's help ends with its default
    where it has one to show and does not say it already."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        nothing_to_show = action.default is None or action.default is False or action.default == []
        if (nothing_to_show or not action.option_strings or action.default == argparse.SUPPRESS
                or action.nargs == 0 or "%(default)" in text or "default:" in text):
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse with deltaserve's help format; subcommands' parsers are made of the same class."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def default(config: type, field: str) -> Any:
    """A config class's default for `field` (a pydantic model or a dataclass): options take the defaults their
    configs define instead of repeating them."""
    if issubclass(config, BaseModel):
        return config.model_fields[field].get_default(call_default_factory=True)
    spec = next(f for f in dataclasses.fields(config) if f.name == field)
    return spec.default_factory() if spec.default is dataclasses.MISSING else spec.default


def add_sandbox_option(parser: argparse.ArgumentParser, default_value: str = "auto") -> None:
    """--sandbox, on every command that runs a project's tests (tools.sandbox)."""
    parser.add_argument("--sandbox", default=default_value, choices=SANDBOXES,
                        help="where the tests run: bwrap (bubblewrap: no network, nothing writable but the "
                             "workspace and a private /tmp, no API keys, resource limits), none, or auto: "
                             "bwrap when it works here, else none with a warning (default: %(default)s)")


def build_parser(load: Iterable[str] | None = None, argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser with the subcommands in `load` (default: all) complete; the others carry only their help
    line, so their modules are not imported. A command whose `register` takes `argv` (bench) is given the
    command line, to build only the part of itself it names."""
    load = COMMANDS if load is None else set(load)
    parser = Parser(
        prog="deltaserve",
        description=wrapped("Make coding agents decode less: a prefix-caching local engine and an "
                            "edit-by-diff agent harness that reports prefill and decode tokens saved at "
                            "every step."),
        epilog=EXAMPLES,
    )
    parser.add_argument("--version", action="version", version=f"deltaserve {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_line in COMMANDS.items():
        if name in load:
            register = importlib.import_module(f"deltaserve.cli.{name}").register
            takes_argv = "argv" in inspect.signature(register).parameters
            register(subparsers, argv) if takes_argv else register(subparsers)
        else:
            subparsers.add_parser(name, help=help_line)
    described(parser)
    return parser


def described(parser: argparse.ArgumentParser) -> None:
    """Every subcommand without a description of its own opens its --help with its help line."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                sub = action.choices[choice.dest]
                if sub.description is None and choice.help:
                    sub.description = wrapped(choice.help[0].upper() + choice.help[1:] + ".")
                described(sub)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # transformers' advice to its API's callers ("Pass `dtype=...` to avoid it") is nothing a CLI user can act
    # on; set before transformers is imported (here and in the processes a load starts)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    parser = build_parser([a for a in argv if a in COMMANDS][:1], argv)  # only the command being run
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (DeltaserveError, OSError) as exc:
        message = exc.message if isinstance(exc, DeltaserveError) else _os_message(exc)
        print(f"deltaserve {args.command}: {message}", file=sys.stderr)
        return getattr(args, "error_exit", 1)


def _os_message(exc: OSError) -> str:
    return f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)


if __name__ == "__main__":
    sys.exit(main())
