"""`deltaserve eval check-tasks | decode-cost | agent | report`: the bug-fix task suite and its evals."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from deltaserve.errors import DeltaserveError


def _comma_list(value: str | None) -> list[str] | None:
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


def _default_out(kind: str) -> Path:
    return Path("runs") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def _error(exc: Exception) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return 1


def _print_paths(console, paths: dict) -> None:
    for name, path in paths.items():
        console.print(f"{name}: {path}")


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="task suite checks, decode-cost and agent evals, reports")
    sub = parser.add_subparsers(dest="eval_command", metavar="EVAL")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    check = sub.add_parser("check-tasks", help="each task fails before its gold patch and passes after")
    check.add_argument("--tasks", help="comma-separated task ids (default: all)")
    check.add_argument("--workers", type=int, default=2)
    check.add_argument("--tasks-dir", type=Path, help="a task suite other than evals/tasks")
    check.set_defaults(func=run_check_tasks)

    dc = sub.add_parser("decode-cost", help="teacher-force each format's gold reply through the engine")
    dc.add_argument("--model", default="smollm2-135m", help="engine model: bundled name, HF dir or .gguf")
    dc.add_argument("--tasks", help="comma-separated task ids (default: all, or the --quick pick)")
    dc.add_argument("--formats", default="whole,udiff,search_replace")
    dc.add_argument("--quick", action="store_true", help="a few tasks of varied size, whole replies capped")
    dc.add_argument("--max-reply-tokens", type=int, default=None,
                    help="force-decode at most this many tokens of a reply (the rest is scaled; marked *)")
    dc.add_argument("--no-replay", action="store_true", help="skip the multi-step prefix-cache replay")
    dc.add_argument("--replay-tasks", type=int, default=None,
                    help="replay on only this many tasks, spread over the suite (default: all)")
    dc.add_argument("--replay-off-tasks", type=int, default=None,
                    help="replay with the cache off (for the TTFT comparison) on only this many tasks, spread "
                    "over the suite (default: all)")
    dc.add_argument("--speculative", action=argparse.BooleanOptionalAction, default=None,
                    help="engine speculation on/off (default: the engine's default)")
    dc.add_argument("--dtype", default="auto", help="engine dtype (auto: the engine's choice for the device)")
    dc.add_argument("--threads", type=int, help="CPU threads for the engine (default: the engine's); 1 is "
                    "steadier when other jobs share the cores")
    dc.add_argument("--out", type=Path, help="output dir (default: runs/decode-cost-<time>)")
    dc.set_defaults(func=run_decode_cost)

    ag = sub.add_parser("agent", help="run the agent on the suite per model x format (resumable)")
    ag.add_argument("--models", default="local/smollm2-135m", help="comma-separated litellm model strings")
    ag.add_argument("--formats", default="udiff,search_replace,whole")
    ag.add_argument("--tasks", help="comma-separated task ids (default: all)")
    ag.add_argument("--max-steps", type=int, default=4)
    ag.add_argument("--max-tokens", type=int, default=1024, help="max tokens per reply")
    ag.add_argument("--api-base", default=None)
    ag.add_argument("--out", type=Path, help="output dir; rerunning with the same dir resumes")
    ag.set_defaults(func=run_agent)

    rep = sub.add_parser("report", help="rebuild tables and plots from a results JSONL")
    rep.add_argument("results", type=Path)
    rep.add_argument("--out", type=Path, help="output dir (default: next to the results file)")
    rep.set_defaults(func=run_report)


def run_check_tasks(args) -> int:
    from rich.console import Console

    from deltaserve.evals.check_tasks import check_tasks, render_table
    from deltaserve.evals.task_suite import load_tasks

    try:
        tasks = load_tasks(args.tasks_dir, _comma_list(args.tasks))
    except (DeltaserveError, OSError, ValueError) as exc:
        return _error(exc)
    if not tasks:
        print("no tasks found", file=sys.stderr)
        return 1
    checks = check_tasks(tasks, workers=args.workers)
    console = Console()
    console.print(render_table(checks))
    bad = [c.task_id for c in checks if not c.ok]
    console.print(f"{len(checks) - len(bad)}/{len(checks)} tasks ok" + (f"; failing: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


def run_decode_cost(args) -> int:
    from deltaserve.evals.decode_cost import DecodeCostConfig, run_decode_cost_eval

    config = DecodeCostConfig(
        model=args.model,
        task_ids=_comma_list(args.tasks),
        formats=_comma_list(args.formats),
        quick=args.quick,
        max_reply_tokens=args.max_reply_tokens,
        replay=not args.no_replay,
        replay_tasks=args.replay_tasks,
        replay_off_tasks=args.replay_off_tasks,
        speculative=args.speculative,
        dtype=args.dtype,
        threads=args.threads,
        out_dir=args.out or _default_out("decode-cost"),
    )
    try:
        result = run_decode_cost_eval(config)
    except (DeltaserveError, ValueError) as exc:
        return _error(exc)
    print_summary(result)
    return 0


def print_summary(result: dict, console=None) -> None:
    """The eval's per-task table, its summary and where its files went."""
    from rich.console import Console
    from rich.markdown import Markdown
    from rich.table import Table

    from deltaserve.evals.report import decode_table
    from deltaserve.evals.results import load_rows

    console = console or Console()
    console.print(Markdown(decode_table(load_rows(result["paths"]["results"]))))
    table = Table(title="decode cost: summary")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result["summary"].items():
        table.add_row(key, "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value))
    console.print(table)
    _print_paths(console, result["paths"])


def run_agent(args) -> int:
    from deltaserve.evals.agent_eval import AgentEvalConfig, run_agent_eval

    config = AgentEvalConfig(
        models=_comma_list(args.models),
        formats=_comma_list(args.formats),
        task_ids=_comma_list(args.tasks),
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        api_base=args.api_base,
        out_dir=args.out or _default_out("agent"),
    )
    try:
        result = run_agent_eval(config)
    except (DeltaserveError, ValueError) as exc:
        return _error(exc)
    from rich.console import Console

    console = Console()
    console.print(f"ran {result['ran']} runs, skipped {result['skipped']} already in the results")
    _print_report(console, result["paths"])
    return 0


def _print_report(console, paths: dict) -> None:
    """The written report.md, rendered, then where every file went."""
    from rich.markdown import Markdown

    console.print(Markdown(paths["report"].read_text()))
    _print_paths(console, paths)


def run_report(args) -> int:
    from rich.console import Console

    from deltaserve.evals.report import report_from_file

    try:
        paths = report_from_file(args.results, args.out)
    except (DeltaserveError, FileNotFoundError, ValueError) as exc:
        return _error(exc)
    _print_report(Console(), paths)
    return 0
