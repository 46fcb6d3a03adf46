"""Validate the task suite: each task's listed tests fail before its gold patch and all tests pass after.

Each task runs in a temporary copy of its repo; the gold patch goes through `tools.patch.apply_patch`, the
same code the agent's edits go through, so a gold diff the tools cannot apply is caught here.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table

from deltaserve.evals.task_suite import Task
from deltaserve.tools.patch import PatchError, apply_patch
from deltaserve.tools.sandbox import Sandbox, choose
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

TEST_TIMEOUT_S = 60.0
# Task tests are plain pytest: skipping plugin autoload (hypothesis alone imports for ~1 s) keeps a check
# at about a second per run, and proves no task leans on a plugin.
TEST_ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@dataclass
class TaskCheck:
    task_id: str
    failing_before: list[str] = field(default_factory=list)
    passed_after: int = 0
    problems: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems


def test_command(task: Task) -> str:
    """The task's test command, run by this interpreter (the venv's), whatever `python` is on PATH."""
    cmd = task.spec.test_command
    for prefix in ("python3 ", "python "):
        if cmd.startswith(prefix):
            return f"{shlex.quote(sys.executable)} {cmd[len(prefix):]}"
    return cmd


def copy_repo(task: Task, dest: Path) -> Path:
    """A fresh copy of the task's buggy repo (no caches carried over)."""
    repo = dest / "repo"
    shutil.copytree(task.repo_dir, repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return repo


def _same_ids(expected: list[str], got: list[str]) -> bool:
    return sorted(set(expected)) == sorted(set(got))


def check_task(task: Task, sandbox: Sandbox | str = "auto") -> TaskCheck:
    started = time.perf_counter()
    result = TaskCheck(task_id=task.id)
    with tempfile.TemporaryDirectory(prefix=f"check-{task.id}-") as tmp:
        ws = Workspace(copy_repo(task, Path(tmp)))

        def tests():
            return run_tests(ws, test_command(task), timeout=TEST_TIMEOUT_S, env=TEST_ENV, sandbox=sandbox)

        before = tests()
        result.failing_before = sorted(before.failing_tests)
        if before.ok:
            result.problems.append("tests pass before the gold patch")
        elif not _same_ids(task.spec.failing_tests, before.failing_tests):
            result.problems.append(
                f"failing before: expected {sorted(task.spec.failing_tests)}, "
                f"got {sorted(before.failing_tests)}"
            )
        try:
            apply_patch(ws, task.gold_diff)
        except PatchError as exc:
            result.problems.append(f"gold patch does not apply: {exc}")
        else:
            after = tests()
            result.passed_after = after.passed
            if not after.ok:
                failing = sorted(after.failing_tests) or [f"exit {after.exit_code}"]
                result.problems.append(f"tests fail after the gold patch: {failing}")
    result.duration_s = time.perf_counter() - started
    return result


def check_tasks(tasks: list[Task], workers: int = 2, sandbox: str = "auto") -> list[TaskCheck]:
    """Check tasks in parallel (each check is mostly waiting on pytest subprocesses); order kept. The tests
    run in `sandbox` (tools.sandbox: auto, bwrap, none), chosen once for all of them."""
    box = choose(sandbox)
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda task: check_task(task, box), tasks))


def render_table(checks: list[TaskCheck]):
    """A rich Table: one row per task."""
    table = Table(title="task suite check")
    for col in ("task", "ok", "failing before", "passed after", "s", "problems"):
        table.add_column(col, overflow="fold")
    for c in checks:
        table.add_row(
            c.task_id,
            "[green]yes[/]" if c.ok else "[red]NO[/]",
            str(len(c.failing_before)),
            str(c.passed_after),
            f"{c.duration_s:.1f}",
            "; ".join(c.problems),
        )
    return table
