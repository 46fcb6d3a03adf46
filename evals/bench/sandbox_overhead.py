"""What the bwrap sandbox costs the agent's test runs: every bundled task's test command on a fresh copy of
its repo, unsandboxed and under bwrap in turn, `repeats` times each (after one untimed run of each); the
median wall time per task, the ratio, and overall the summed medians' ratio. Each time is a whole
run_tests call (sandbox start, the tests, the kill of what is left, giving files back). Both runs of a
task must agree on which tests fail, or the sandbox changed a result.

    deltaserve bench sandbox --repeats 5
    deltaserve bench sandbox --tasks a-median,b-geometry
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from deltaserve.errors import EvalError
from deltaserve.evals.bench.table import table
from deltaserve.evals.check_tasks import TEST_ENV, TEST_TIMEOUT_S, copy_repo, test_command
from deltaserve.evals.task_suite import Task, load_tasks
from deltaserve.tools.sandbox import BwrapSandbox, NoSandbox, bwrap_problem
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

GOAL = 1.20  # bwrap / none, summed over the suite


def measure_task(task: Task, repeats: int) -> dict:
    """Median seconds per sandbox for one task, and whether both saw the same failing tests."""
    boxes = {"none": NoSandbox(), "bwrap": BwrapSandbox()}
    times: dict[str, list[float]] = {name: [] for name in boxes}
    failing: dict[str, set[str]] = {}
    with tempfile.TemporaryDirectory(prefix=f"sandbox-bench-{task.id}-") as tmp:
        ws = Workspace(copy_repo(task, Path(tmp)))
        for rep in range(repeats + 1):  # the first round warms the caches and is not timed
            order = list(boxes) if rep % 2 else list(reversed(boxes))  # alternate who goes first
            for name in order:
                started = time.perf_counter()
                res = run_tests(ws, test_command(task), timeout=TEST_TIMEOUT_S, env=TEST_ENV,
                                sandbox=boxes[name])
                if rep:
                    times[name].append(time.perf_counter() - started)
                failing[name] = set(res.failing_tests)
    medians = {name: statistics.median(values) for name, values in times.items()}
    return {"task": task.id, **medians, "same": failing["none"] == failing["bwrap"]}


def report(results: list[dict], repeats: int) -> tuple[str, float]:
    rows = [[r["task"], r["none"], r["bwrap"], r["bwrap"] / r["none"], "yes" if r["same"] else "NO"]
            for r in results]
    total_none = sum(r["none"] for r in results)
    total_bwrap = sum(r["bwrap"] for r in results)
    overall = total_bwrap / total_none
    rows.append(["all (sum of medians)", total_none, total_bwrap, overall, ""])
    title = f"Test runs without and with the bwrap sandbox, median of {repeats} (seconds)"
    text = table(title, ["task", "none s", "bwrap s", "bwrap/none", "same result"], rows)
    median_ratio = statistics.median(r["bwrap"] / r["none"] for r in results)
    verdict = "within" if overall < GOAL else "OVER"
    text += (f"\noverall overhead {100 * (overall - 1):+.1f}% (median per task "
             f"{100 * (median_ratio - 1):+.1f}%), {verdict} the {100 * (GOAL - 1):.0f}% goal")
    return text, overall


def run(args: argparse.Namespace) -> int:
    problem = bwrap_problem()
    if problem is not None:
        print(f"cannot measure the sandbox: {problem}", file=sys.stderr)
        return 1
    task_ids = [t.strip() for t in args.tasks.split(",") if t.strip()] if args.tasks else None
    try:
        tasks = load_tasks(None, task_ids)
    except EvalError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    results = []
    for task in tasks:
        results.append(measure_task(task, args.repeats))
        print(f"{task.id}: none {results[-1]['none']:.3f}s, bwrap {results[-1]['bwrap']:.3f}s", flush=True)
    text, _ = report(results, args.repeats)
    print("\n" + text)
    return 0 if all(r["same"] for r in results) else 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repeats", type=int, default=5,
                   help="timed runs per task and sandbox (default: %(default)s)")
    p.add_argument("--tasks", default=None, help="comma-separated task ids (default: all bundled tasks)")
