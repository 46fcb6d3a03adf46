"""Live agent eval: harness.Agent on each task x model x format, in a temp copy of the task's repo.

One JSONL row per run, appended as it finishes, so an interrupted eval resumes where it stopped (runs
already in the file are skipped; runs that ended in an error are retried). "Solved" is checked here, not
taken from the agent: after the run the task's original test files are restored and its tests run once more.

`workers` > 1 runs that many at once, each in its own temp copy, against a provider that batches
concurrent requests (our server, vLLM, a hosted API): one run's tests and prompt building then overlap
the others' decoding. A `local/` engine in this process answers one request at a time, so there only
the test runs overlap. Rows are appended as runs finish, in any order.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from deltaserve.evals.check_tasks import TEST_ENV, copy_repo, test_command
from deltaserve.evals.progress import progress_bar
from deltaserve.evals.report import report_from_file
from deltaserve.evals.results import append_row, load_rows, rows_of
from deltaserve.evals.task_suite import Task, load_tasks
from deltaserve.harness.config import DEFAULT_MODEL, EDIT_DECODINGS, AgentConfig
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.trace import run_header
from deltaserve.tools.sandbox import choose
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace


@dataclass
class AgentEvalConfig:
    models: list[str] = field(default_factory=lambda: [DEFAULT_MODEL])
    formats: list[str] = field(default_factory=lambda: ["udiff", "search_replace", "whole"])
    candidates: list[int] = field(default_factory=lambda: [1])  # replies per step; each count is a run
    # how search_replace replies are decoded (harness.config.EDIT_DECODINGS); each is a run
    decodings: list[str] = field(default_factory=lambda: ["default"])
    task_ids: list[str] | None = None
    max_steps: int = 4  # per run; fewer than the agent's own default, the suite is long
    max_tokens: int = AgentConfig.model_fields["max_tokens"].default
    api_base: str | None = None
    sandbox: str = AgentConfig.model_fields["sandbox"].default  # where every test run happens (tools.sandbox)
    localize: bool = AgentConfig.model_fields["localize"].default  # name coverage's suspects in prompts
    out_dir: Path = Path("runs/agent")
    tasks_dir: Path | None = None
    progress: bool = True
    workers: int = 1  # runs at once
    # extra Agent/litellm kwargs per run, e.g. lambda task, model, fmt: {"mock_response": "..."}
    run_kwargs: Callable[[Task, str, str], dict] | None = None


def run_key(row: dict) -> tuple[str, str, str, int, str]:
    return row["task"], row["model"], row["format"], row.get("candidates", 1), row.get("decoding", "default")


def done_runs(results: Path) -> set[tuple[str, str, str, int, str]]:
    """Runs already recorded without an error (an errored run is tried again)."""
    if not results.is_file():
        return set()
    return {run_key(r) for r in rows_of(load_rows(results), "agent") if not r.get("error")}


def _is_test_file(rel: Path) -> bool:
    return any(part.startswith(("test", "conftest")) for part in rel.parts)


def restore_tests(task: Task, repo: Path) -> None:
    """Put the task's original test files back, so a run that edited the tests cannot count as solved."""
    for src in task.repo_dir.rglob("*"):
        rel = src.relative_to(task.repo_dir)
        if src.is_file() and _is_test_file(rel) and "__pycache__" not in rel.parts:
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, repo / rel)


def run_one(task: Task, model: str, fmt: str, config: AgentEvalConfig, logs: Path,
            candidates: int = 1, decoding: str = "default") -> dict:
    row = {"kind": "agent", "task": task.id, "model": model, "format": fmt, "candidates": candidates,
           "decoding": decoding,
           "solved": False, "steps": 0, "prompt_tokens": 0, "cached_tokens": None, "completion_tokens": 0,
           "whole_file_tokens": 0, "decode_saved": 0, "decode_passes": None, "decode_passes_saved": None,
           "est_seconds_saved": None, "stopped": "", "suspects": [], "error": None}
    extra = {**EDIT_DECODINGS[decoding], **(config.run_kwargs(task, model, fmt) if config.run_kwargs else {})}
    name = (f"{task.id}__{model.replace('/', '_')}__{fmt}" + (f"__n{candidates}" if candidates > 1 else "")
            + (f"__{decoding}" if decoding != "default" else ""))
    from deltaserve.harness import Agent  # litellm: seconds, not paid by `deltaserve eval --help`
    from deltaserve.harness.local_provider import engine_numerics

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"agent-{task.id}-") as tmp, \
            (logs / f"{name}.log").open("w", encoding="utf-8") as log:
        repo = copy_repo(task, Path(tmp))
        command = test_command(task)
        try:
            agent = Agent(repo, task.spec.description, test_cmd=command, model=model, edit_format=fmt,
                          max_steps=config.max_steps, max_tokens=config.max_tokens, api_base=config.api_base,
                          candidates=candidates, sandbox=config.sandbox, allow_dirty=True,
                          localize=config.localize,
                          trace=logs / f"{name}.trace.jsonl",
                          console=Console(file=log, width=160, force_terminal=False), **extra)
            report = agent.run()
        except Exception as exc:  # noqa: BLE001 - one broken run must not end the eval; it is recorded
            row["error"] = f"{type(exc).__name__}: {exc}"
        else:
            row.update(steps=len(report.steps), prompt_tokens=report.prompt_tokens,
                       cached_tokens=report.cached_tokens, completion_tokens=report.completion_tokens,
                       whole_file_tokens=report.whole_file_tokens, decode_saved=report.decode_saved,
                       decode_passes=report.decode_passes, decode_passes_saved=report.decode_passes_saved,
                       est_seconds_saved=report.est_seconds_saved,
                       stopped=report.stopped, suspects=report.suspects,
                       early_stops=sum(1 for s in report.steps if s.outcome == Outcome.STOPPED_EARLY),
                       decode_budget_unspent=sum(s.decode_budget_unspent or 0 for s in report.steps))
            restore_tests(task, repo)
            row["solved"] = run_tests(Workspace(repo), command, env=TEST_ENV, sandbox=config.sandbox).ok
    row["wall_s"] = time.perf_counter() - started
    row["engine"] = engine_numerics(model)  # deterministic or not: reruns compare only like with like
    return row


def run_agent_eval(config: AgentEvalConfig) -> dict:
    """Run every task x model x format not already in out_dir/results.jsonl; then write the report."""
    choose(config.sandbox)  # bwrap asked for but unusable: SandboxError before any run
    tasks = load_tasks(config.tasks_dir, config.task_ids)
    out_dir = Path(config.out_dir)
    logs = out_dir / "runs"
    logs.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.jsonl"
    done = done_runs(results)
    unknown = [d for d in config.decodings if d not in EDIT_DECODINGS]
    if unknown:
        raise ValueError(f"unknown decoding {unknown[0]!r}: choose from {', '.join(EDIT_DECODINGS)}")
    todo = [(t, m, f, n, d) for t in tasks for m in config.models for f in config.formats
            for n in config.candidates for d in config.decodings if (t.id, m, f, n, d) not in done]
    if todo:  # what ran, where: the report's header (a resumed eval adds one row per resume)
        append_row(results, {"kind": "run", **run_header(", ".join(config.models), eval="agent")})
    workers = max(1, config.workers)
    with progress_bar(config.progress) as progress, ThreadPoolExecutor(max_workers=workers) as pool:
        bar = progress.add_task("agent eval", total=len(todo))

        def start(task: Task, model: str, fmt: str, n: int, decoding: str) -> dict:
            # the bar names the latest run started
            shown = "" if decoding == "default" else f" · {decoding}"
            progress.update(bar, description=f"{task.id} · {model} · {fmt} · x{n}{shown}")
            return run_one(task, model, fmt, config, logs, n, decoding)

        for finished in as_completed([pool.submit(start, *run) for run in todo]):
            append_row(results, finished.result())  # only this thread writes the file
            progress.advance(bar)
    paths = report_from_file(results, out_dir)
    return {"ran": len(todo), "skipped": len(done), "paths": {"results": results, **paths}}
