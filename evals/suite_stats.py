"""The shape of a suite's gold patches: changed lines, hunks and files per task, and their spread.

Real bug fixes are rarely one-line edits (SWE-bench Lite's median gold patch changes 6 lines), and how much
a diff saves over a whole-file reply depends on the diff's size, so the suite's spread is worth watching.

    python -m deltaserve.evals.suite_stats [TASKS_DIR]
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from deltaserve.evals.gold_diff import parse_gold_diff
from deltaserve.evals.task_suite import Task, load_tasks


@dataclass(frozen=True)
class GoldPatchStats:
    task_id: str
    added: int
    removed: int
    hunks: int
    files: int

    @property
    def changed(self) -> int:
        """Added plus removed lines (a modified line counts twice, as in `git diff --stat`)."""
        return self.added + self.removed


def gold_patch_stats(task: Task) -> GoldPatchStats:
    gold = parse_gold_diff(task.gold_diff)
    return GoldPatchStats(task_id=task.id, added=gold.added, removed=gold.removed, hunks=gold.hunks,
                          files=gold.files)


def summarize(stats: list[GoldPatchStats]) -> dict[str, float]:
    changed = [s.changed for s in stats]
    hunks = [s.hunks for s in stats]
    return {
        "tasks": len(stats),
        "changed_median": statistics.median(changed),
        "changed_min": min(changed),
        "changed_max": max(changed),
        "hunks_median": statistics.median(hunks),
        "hunks_max": max(hunks),
        "multi_file": sum(s.files > 1 for s in stats),
    }


def render(stats: list[GoldPatchStats]) -> str:
    width = max(len(s.task_id) for s in stats)
    lines = [f"{'task':<{width}}  changed  (+/-)      hunks  files"]
    for s in stats:
        counts = f"+{s.added}/-{s.removed}"
        lines.append(f"{s.task_id:<{width}}  {s.changed:>7}  {counts:<9}  {s.hunks:>5}  {s.files:>5}")
    total = summarize(stats)
    lines.append(
        f"{total['tasks']} tasks: changed lines median {total['changed_median']:g} "
        f"(min {total['changed_min']}, max {total['changed_max']}); hunks median {total['hunks_median']:g} "
        f"(max {total['hunks_max']}); {total['multi_file']} across several files"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    tasks = load_tasks(Path(args[0]) if args else None)
    if not tasks:
        print("no tasks found", file=sys.stderr)
        return 1
    print(render([gold_patch_stats(t) for t in tasks]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
