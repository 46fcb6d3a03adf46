"""`deltaserve eval check-tasks | decode-cost | agent | report | import-swebench`: the bug-fix task suite
(the bundled one or any folder of tasks) and its evals."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from deltaserve.cli import COMMANDS, add_sandbox_option, default
from deltaserve.cli.kv_options import add_kv_cache_options, kv_cache_kwargs
from deltaserve.cli.loading import loading_status
from deltaserve.cli.model_names import agent_model, engine_model
from deltaserve.cli.quant_options import add_quant_options, quant_kwargs
from deltaserve.engine import EngineConfig
from deltaserve.engine.config import SPECULATIVE_METHODS
from deltaserve.evals.agent_eval import AgentEvalConfig, run_agent_eval
from deltaserve.evals.check_tasks import check_tasks, render_table
from deltaserve.evals.console import print_decode_summary, print_report
from deltaserve.evals.decode_cost import DecodeCostConfig, load_engine, plan_eval, run_decode_cost_eval
from deltaserve.evals.report import report_from_file
from deltaserve.evals.swebench_import import import_swebench
from deltaserve.evals.task_suite import load_tasks
from deltaserve.harness import providers
from deltaserve.harness.config import EDIT_DECODINGS


def _comma_list(value: str | None) -> list[str] | None:
    return [t.strip() for t in value.split(",") if t.strip()] if value else None


def _default_out(kind: str) -> Path:
    return Path("runs") / f"{kind}-{time.strftime('%Y%m%d-%H%M%S')}"


def _add_tasks_dir(parser) -> None:
    parser.add_argument("--tasks-dir", type=Path, metavar="DIR",
                        help="a task suite of your own: folders with task.json, repo/ and the gold patch "
                             "(default: the bundled suite)")


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help=COMMANDS["eval"])
    sub = parser.add_subparsers(dest="eval_command", metavar="EVAL")
    parser.set_defaults(func=lambda args: (parser.print_help(), 2)[1])

    check = sub.add_parser("check-tasks", help="each task fails before its gold patch and passes after")
    check.add_argument("--tasks", metavar="IDS", help="comma-separated task ids (default: all)")
    check.add_argument("--workers", type=int, default=2, metavar="N", help="tasks checked at once")
    _add_tasks_dir(check)
    add_sandbox_option(check)
    check.set_defaults(func=run_check_tasks)

    dc = sub.add_parser("decode-cost", help="teacher-force each format's gold reply through the engine")
    dc.add_argument("--model", default=default(DecodeCostConfig, "model"), metavar="MODEL",
                    help="the engine's model: a bundled name or local/<name>, a model dir, a .gguf, or a hub "
                         "id in the HF cache")
    dc.add_argument("--tasks", metavar="IDS",
                    help="comma-separated task ids (default: all, or the --quick pick)")
    _add_tasks_dir(dc)
    dc.add_argument("--formats", default="whole,udiff,search_replace", metavar="LIST",
                    help="comma-separated edit formats whose gold replies are decoded")
    dc.add_argument("--quick", action="store_true", help="a few tasks of varied size, whole replies capped")
    dc.add_argument("--max-reply-tokens", type=int, default=None, metavar="N",
                    help="force-decode at most this many tokens of a reply (the rest is scaled; marked *; "
                         "default: no cap)")
    dc.add_argument("--no-replay", action="store_true", help="skip the multi-step prefix-cache replay")
    dc.add_argument("--replay-tasks", type=int, default=None, metavar="N",
                    help="replay on only this many tasks, spread over the suite (default: all)")
    dc.add_argument("--replay-off-tasks", type=int, default=None, metavar="N",
                    help="replay with the cache off (for the TTFT comparison) on only this many tasks, "
                    "spread over the suite (default: all)")
    dc.add_argument("--speculative", choices=SPECULATIVE_METHODS, default=None,
                    help=f"the engine's draft method (default: {default(EngineConfig, 'speculative')})")
    dc.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16", "float16"],
                    help="engine dtype (auto: the engine's choice for the device)")
    dc.add_argument("--threads", type=int, metavar="N", help="CPU threads for the engine (default: torch's); "
                    "1 is steadier when other jobs share the cores")
    add_quant_options(dc)
    dc.add_argument("--out", type=Path, metavar="DIR", help="output dir (default: runs/decode-cost-<time>)")
    add_sandbox_option(dc, default(DecodeCostConfig, "sandbox"))
    dc.set_defaults(func=run_decode_cost)

    ag = sub.add_parser("agent", help="run the agent on the suite per model x format (resumable)")
    ag.add_argument("--models", default=",".join(default(AgentEvalConfig, "models")), metavar="LIST",
                    help="comma-separated models, each named as for fix: a bundled name or local/<name>, a "
                         "model dir or .gguf, a hub id in the HF cache, or a litellm provider string")
    ag.add_argument("--formats", default=",".join(default(AgentEvalConfig, "formats")), metavar="LIST",
                    help="comma-separated edit formats")
    ag.add_argument("--candidates", default=",".join(map(str, default(AgentEvalConfig, "candidates"))),
                    metavar="LIST", help="comma-separated candidate counts per step, each a run")
    ag.add_argument("--decoding", default=",".join(default(AgentEvalConfig, "decodings")), metavar="LIST",
                    help="comma-separated ways to decode edit replies, each a run: constrained "
                         "(every block quotes lines of a file in play, so it applies; our engine only; "
                         "symbol replies also stopped early), early-stop (streamed, cut at the first SEARCH "
                         "line the file lacks or symbol line that cannot parse), plain, or "
                         "default (as fix: constrained on local/ models, early-stop elsewhere); compare "
                         "them in one report, e.g. plain,constrained")
    ag.add_argument("--threads", type=int, default=None, metavar="N",
                    help="CPU threads for local engines (default: torch's)")
    ag.add_argument("--tasks", metavar="IDS", help="comma-separated task ids (default: all)")
    _add_tasks_dir(ag)
    ag.add_argument("--max-steps", type=int, default=default(AgentEvalConfig, "max_steps"), metavar="N",
                    help="model calls per run at most")
    ag.add_argument("--max-tokens", type=int, default=default(AgentEvalConfig, "max_tokens"), metavar="N",
                    help="tokens per reply at most")
    ag.add_argument("--api-base", default=None, metavar="URL",
                    help="OpenAI-compatible base URL for provider models (e.g. a deltaserve or vLLM server)")
    ag.add_argument("--no-localize", dest="localize", action="store_false",
                    help="no coverage localization before each run's first prompt (on by default, as in fix)")
    ag.add_argument("--workers", type=int, default=default(AgentEvalConfig, "workers"), metavar="N",
                    help="runs at once (default: %(default)s); worth it against a server or API that batches "
                         "concurrent requests; a local/ engine answers one request at a time, so there only "
                         "test runs overlap")
    local_engines = ag.add_argument_group("local models' engines")
    add_kv_cache_options(local_engines)
    add_quant_options(local_engines)
    ag.add_argument("--out", type=Path, metavar="DIR",
                    help="output dir; rerunning with the same dir resumes (default: runs/agent-<time>)")
    add_sandbox_option(ag, default(AgentEvalConfig, "sandbox"))
    ag.set_defaults(func=run_agent)

    imp = sub.add_parser("import-swebench",
                         help="SWE-bench-format instances (JSONL) -> task folders, from local git clones")
    imp.add_argument("instances", type=Path, metavar="FILE.jsonl",
                     help="one instance a line: instance_id, repo, base_commit, patch, test_patch, "
                          "FAIL_TO_PASS, PASS_TO_PASS (problem_statement, if there, is the description)")
    imp.add_argument("--repos", type=Path, required=True, metavar="DIR",
                     help="git clones, as DIR/<owner>__<name> or DIR/<name>")
    imp.add_argument("--out", type=Path, required=True, metavar="TASKS_DIR",
                     help="where the task folders go (then: eval check-tasks --tasks-dir TASKS_DIR)")
    imp.set_defaults(func=run_import_swebench)

    rep = sub.add_parser("report", help="rebuild tables and plots from results JSONL files (several: merged)")
    rep.add_argument("results", type=Path, nargs="+",
                     help="results.jsonl of one or more eval runs; agent traces beside each are read too")
    rep.add_argument("--out", type=Path, metavar="DIR",
                     help="output dir (default: next to the first results file)")
    rep.set_defaults(func=run_report)


def run_check_tasks(args) -> int:
    tasks = load_tasks(args.tasks_dir, _comma_list(args.tasks))
    if not tasks:
        print("no tasks found", file=sys.stderr)
        return 1
    checks = check_tasks(tasks, workers=args.workers, sandbox=args.sandbox)
    console = Console()
    console.print(render_table(checks))
    bad = [c.task_id for c in checks if not c.ok]
    failing = f"; failing: {', '.join(bad)}" if bad else ""
    console.print(f"{len(checks) - len(bad)}/{len(checks)} tasks ok{failing}")
    return 1 if bad else 0


def run_decode_cost(args) -> int:
    model = engine_model(args.model)
    config = DecodeCostConfig(
        model=model,
        task_ids=_comma_list(args.tasks),
        tasks_dir=args.tasks_dir,
        formats=_comma_list(args.formats),
        quick=args.quick,
        max_reply_tokens=args.max_reply_tokens,
        replay=not args.no_replay,
        replay_tasks=args.replay_tasks,
        replay_off_tasks=args.replay_off_tasks,
        speculative=args.speculative,
        dtype=args.dtype,
        threads=args.threads,
        sandbox=args.sandbox,
        out_dir=args.out or _default_out("decode-cost"),
        engine_kwargs=quant_kwargs(args),
    )
    plan_eval(config)  # a bad --formats or --tasks fails before the model loads
    with loading_status(model):
        engine = load_engine(config)
    print_decode_summary(run_decode_cost_eval(config, engine=engine))
    return 0


def run_agent(args) -> int:
    if args.workers < 1:
        print("deltaserve eval agent: --workers must be at least 1", file=sys.stderr)
        return 2
    decodings = _comma_list(args.decoding) or default(AgentEvalConfig, "decodings")
    unknown = [d for d in decodings if d not in EDIT_DECODINGS]
    if unknown:
        print(f"deltaserve eval agent: unknown --decoding {unknown[0]!r}; choose from "
              f"{', '.join(EDIT_DECODINGS)}", file=sys.stderr)
        return 2
    names = _comma_list(args.models) or default(AgentEvalConfig, "models")
    models = [agent_model(m) for m in names]  # every name checked before any run
    from deltaserve.harness import local_provider  # litellm, transformers and torch: after the checks

    for model in models:  # local engines built now, with the disk tier if asked
        with loading_status(providers.local_name(model)):
            local_provider.load(model, num_threads=args.threads, **kv_cache_kwargs(args),
                                **quant_kwargs(args))
    config = AgentEvalConfig(
        models=models,
        formats=_comma_list(args.formats),
        candidates=[int(n) for n in _comma_list(args.candidates)],
        decodings=decodings,
        task_ids=_comma_list(args.tasks),
        tasks_dir=args.tasks_dir,
        max_steps=args.max_steps,
        max_tokens=args.max_tokens,
        api_base=args.api_base,
        localize=args.localize,
        sandbox=args.sandbox,
        out_dir=args.out or _default_out("agent"),
        workers=args.workers,
    )
    result = run_agent_eval(config)
    console = Console()
    console.print(f"ran {result['ran']} runs, skipped {result['skipped']} already in the results")
    print_report(console, result["paths"])
    return 0


def run_import_swebench(args) -> int:
    if not args.instances.is_file():
        print(f"deltaserve eval import-swebench: no file {args.instances}", file=sys.stderr)
        return 1
    result = import_swebench(args.instances, args.repos, args.out, progress=True)
    console = Console()
    for what, why in result.problems.items():
        console.print(f"[red]skipped[/] {escape(what)}: {escape(why)}", highlight=False)
    console.print(f"imported {len(result.imported)} tasks into {args.out}; {len(result.problems)} skipped")
    return 1 if result.problems else 0


def run_report(args) -> int:
    print_report(Console(), report_from_file(args.results, args.out))
    return 0
