"""`deltaserve fix PATH --task "..."`: run the bug-fixing agent on a project directory."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
from pathlib import Path

from deltaserve.cli import COMMANDS, add_sandbox_option, default, wrapped
from deltaserve.cli.kv_options import add_kv_cache_options, kv_cache_kwargs
from deltaserve.cli.loading import loading_status
from deltaserve.cli.model_names import agent_model
from deltaserve.cli.quant_options import add_quant_options, quant_kwargs
from deltaserve.errors import DeltaserveError, HarnessError
from deltaserve.harness import formats, providers
from deltaserve.harness.config import AgentConfig
from deltaserve.harness.events import AgentObserver
from deltaserve.harness.workspace_guard import check_clean, make_copy
from deltaserve.tools.sandbox import choose

FIX_EXAMPLES = """examples:
  deltaserve fix path/to/repo --task "parse_date('2024-02-30') should raise"
  deltaserve fix . --task "fix the failing test" --copy --diff-out fix.diff \\
      --test-cmd "python -m pytest -q tests/test_dates.py"
  deltaserve fix . --task "..." --model smollm2-135m --show-replies
  deltaserve fix . --task "..." --model openai/smollm2-135m \\
      --api-base http://127.0.0.1:8000/v1   # a `deltaserve serve` server
  deltaserve fix . --task "..." --model anthropic/claude-3-5-haiku-latest \\
      --format search_replace --trace run.jsonl

A git checkout with uncommitted changes is refused unless --copy or
--allow-dirty is given. Exit code: 0 when the tests pass, 1 when they still
fail, 2 for bad arguments."""

DESCRIPTION = ("Run the bug-fixing agent on a project directory: it runs the tests, asks the model for "
               "edits (per step in the cheapest format by default), applies them all-or-nothing, reruns "
               "the tests, and prints per step the prompt tokens served from cache (prefill saved) and "
               "the decode tokens and passes saved against re-typing whole files.")


def register(subparsers) -> None:
    p = subparsers.add_parser("fix", help=COMMANDS["fix"],
                              description=wrapped(DESCRIPTION),
                              epilog=FIX_EXAMPLES)
    p.add_argument("path", type=Path, help="project directory (the workspace the agent may edit)")
    p.add_argument("--task", required=True, help="what to fix, in words")
    p.add_argument("--test-cmd", default=None, metavar="CMD",
                   help="test command run in PATH (default: python -m pytest -q -x)")
    p.add_argument("--test-command", dest="test_cmd", help=argparse.SUPPRESS)  # mcp's old spelling
    p.add_argument("--test-timeout", type=float, default=default(AgentConfig, "test_timeout"),
                   metavar="SECONDS", help="a test run is killed after this long")
    p.add_argument("--model", default=default(AgentConfig, "model"), metavar="MODEL",
                   help="a bundled name (qwen2.5-coder-1.5b, smollm2-135m) or local/<name>, a model dir or "
                        ".gguf, a hub id in the HF cache (these run in this process), or a litellm provider "
                        "string (openai/<model> with --api-base, anthropic/<model>, ...)")
    p.add_argument("--api-base", default=None, metavar="URL",
                   help="OpenAI-compatible base URL (e.g. a deltaserve or vLLM server)")
    p.add_argument("--format", default=default(AgentConfig, "edit_format"), choices=formats.names(),
                   help="edit format (default: %(default)s)")
    p.add_argument("--max-steps", type=int, default=default(AgentConfig, "max_steps"), metavar="N",
                   help="model calls at most (default: %(default)s)")
    p.add_argument("--max-tokens", type=int, default=default(AgentConfig, "max_tokens"), metavar="N",
                   help="tokens per reply at most (default: %(default)s)")
    p.add_argument("--temperature", type=float, default=default(AgentConfig, "temperature"), metavar="T",
                   help="sampling temperature of every model call (0: greedy, the same reply every run)")
    p.add_argument("--candidates", type=int, default=default(AgentConfig, "candidates"), metavar="N",
                   help="replies per step, each tried on a scratch copy; the first that passes is kept "
                        "(default: %(default)s)")
    p.add_argument("--allow-test-edits", action="store_true",
                   help="let the model edit test files (refused by default)")
    p.add_argument("--keep-worse-edits", action="store_true",
                   help="keep an edit after which fewer tests pass than before it (undone by default)")
    p.add_argument("--constrain-edits", action=argparse.BooleanOptionalAction, default=None,
                   help="decode replies under their edit format's constraint: every SEARCH/REPLACE block "
                        "and diff hunk quotes real lines of a file in play, a symbol reply is definitions "
                        "of a Python file in play (our engine's edits constraints; default: on for local/ "
                        "models, off elsewhere; pass it for a `deltaserve serve` --api-base)")
    p.add_argument("--no-early-stop", dest="early_stop", action="store_false",
                   help="do not stream search_replace, udiff and symbol replies and stop one at the first "
                        "SEARCH, context or removed line its file does not have, or symbol line that no "
                        "later line makes valid Python (default: stop early)")
    p.add_argument("--no-localize", dest="localize", action="store_false",
                   help="skip the coverage run that ranks the code the failing tests run (pytest "
                        "only; it runs their test files once more, before the first prompt)")
    p.add_argument("--trace", type=Path, default=None, metavar="FILE",
                   help="write the run as JSON lines to FILE: a header (version, model, machine, "
                        "command, date), then one StepReport per step")
    p.add_argument("--show-replies", action="store_true",
                   help="print each of the model's replies as its step finishes")
    p.add_argument("--diff-out", type=Path, default=None, metavar="FILE",
                   help="write the final diff (every edit kept) to FILE")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="CPU threads for a local model's engine (default: torch's; 1 is steadier on a busy "
                        "machine)")
    local_engine = p.add_argument_group("a local model's engine")
    add_kv_cache_options(local_engine)
    add_quant_options(local_engine)
    add_sandbox_option(p, default(AgentConfig, "sandbox"))
    p.add_argument("--dry-run", action="store_true",
                   help="show the first applicable edits without writing them")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--allow-dirty", action="store_true",
                       help="edit a git checkout with uncommitted changes")
    where.add_argument("--copy", action="store_true",
                       help="work on a temporary copy of PATH (removed at the end; keep the edits with "
                            "--diff-out)")
    p.set_defaults(func=run, error_exit=2)


def run(args: argparse.Namespace) -> int:
    if not args.path.is_dir():
        print(f"deltaserve fix: {args.path} is not a directory", file=sys.stderr)
        return 2
    threads = 1 if args.threads is None else args.threads
    if min(args.max_steps, args.max_tokens, args.candidates, threads) < 1:
        print("deltaserve fix: --max-steps, --max-tokens, --candidates and --threads must be at least 1",
              file=sys.stderr)
        return 2
    if args.temperature < 0 or args.test_timeout <= 0:
        print("deltaserve fix: --temperature must be at least 0 and --test-timeout more than 0",
              file=sys.stderr)
        return 2
    if not (args.allow_dirty or args.copy):
        check_clean(args.path)  # before anything slow (loading a model, running the tests)
    choose(args.sandbox)  # bwrap asked for but unusable: a SandboxError (exit 2), also before anything slow
    model = agent_model(args.model)  # a name no command takes: refused with the list of those that work
    workspace = make_copy(args.path) if args.copy else args.path
    if args.copy:
        print(f"working on a copy: {workspace}")
        signal.signal(signal.SIGTERM, _exit)  # a run that is killed removes its copy too
    try:
        report = _fix(args, model, workspace)
    finally:
        if args.copy:
            shutil.rmtree(workspace.parent, ignore_errors=True)  # make_copy's temporary folder
    return 0 if report.solved or (args.dry_run and report.steps) else 1


class ModelLoader(AgentObserver):
    """Loads a local model once the first test run shows there is something to fix, before the first prompt:
    a broken model is a clear error, not a failed first step, and a run whose tests already pass, or whose
    test command runs no test (a mistyped --test-cmd), ends in seconds rather than after the load (the
    bundled 1.5B model's first start converts its GGUF: a minute). An agent observer (on_initial_tests)."""

    def __init__(self, model: str, args: argparse.Namespace):
        self.model, self.args = model, args

    def on_initial_tests(self, tests) -> None:
        if tests.ok or tests.not_run:
            return
        from deltaserve.harness import local_provider  # transformers, torch: seconds

        try:
            with loading_status(providers.local_name(self.model)):
                local_provider.load(self.model, num_threads=self.args.threads, **kv_cache_kwargs(self.args),
                                    **quant_kwargs(self.args))
        except (DeltaserveError, ValueError, OSError) as exc:  # transformers' loaders raise ValueErrors too
            raise HarnessError(f"cannot load {self.model}: {getattr(exc, 'message', exc)}") from exc


def _exit(signum: int, frame) -> None:
    raise SystemExit(128 + signum)


def _fix(args: argparse.Namespace, model: str, workspace: Path):
    config = AgentConfig(model=model, edit_format=args.format, max_steps=args.max_steps,
                         max_tokens=args.max_tokens, temperature=args.temperature, api_base=args.api_base,
                         test_cmd=args.test_cmd, test_timeout=args.test_timeout, candidates=args.candidates,
                         allow_test_edits=args.allow_test_edits, keep_worse_edits=args.keep_worse_edits,
                         localize=args.localize, dry_run=args.dry_run, sandbox=args.sandbox,
                         constrain_edits=args.constrain_edits, early_stop=args.early_stop,
                         allow_dirty=args.allow_dirty or args.copy)  # a copy is ours to edit
    from deltaserve.harness.agent import Agent  # litellm and the rest: seconds, after the checks
    from deltaserve.harness.console_view import ConsoleView

    view = ConsoleView(show_replies=args.show_replies)
    loader = ModelLoader(model, args)  # before the view: the load's status line, then step 0's verdict
    report = Agent(workspace, args.task, config, observers=[loader, view], trace=args.trace).run()
    if args.diff_out is not None:
        args.diff_out.write_text(report.final_diff)
        print(f"final diff written to {args.diff_out}" if report.final_diff else
              f"no edits kept: {args.diff_out} is empty")
    return report
