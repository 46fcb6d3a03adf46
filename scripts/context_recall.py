"""How often the step-1 prompt shows the lines a task's gold patch changes: the context's recall, per task,
with excerpts of long files (harness/excerpt.py) against the head of each file (the earlier behaviour).

    python scripts/context_recall.py [evals/tasks] [--max-file-chars N] [--max-total-chars N]

A fix the model is not shown is a fix it must find with VIEW first, which a small model rarely does. No
model runs: the tests run once per task (unsandboxed, in a temporary copy) for the traceback.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

from unidiff import PatchSet

from deltaserve.harness import context, excerpt
from deltaserve.tools.workspace import Workspace


def changed_lines(diff_text: str) -> dict[str, set[int]]:
    """path -> old-file line numbers the patch removes (for a pure insertion: the line before it)."""
    found: dict[str, set[int]] = {}
    for patched in PatchSet(diff_text):
        lines = found.setdefault(patched.path, set())
        for hunk in patched:
            if hunk.removed:
                lines.update(line.source_line_no for line in hunk if line.is_removed)
                continue
            previous = hunk.source_start  # a pure insertion: the old line before each added one
            for line in hunk:
                if line.is_added:
                    lines.add(previous)
                elif line.source_line_no:
                    previous = line.source_line_no
    return found


def shown_lines(files: list[context.ContextFile]) -> dict[str, set[int]]:
    shown = {}
    for f in files:
        numbers = f.line_numbers or range(1, f.content.count("\n") + 2)
        shown[f.path] = {n for n in numbers if n is not None}
    return shown


def recall(task_dir: Path, caps: dict) -> tuple[float, float, int]:
    """(share of gold lines shown with excerpts, the same with file heads, prompt chars with excerpts)."""
    task = json.loads((task_dir / "task.json").read_text())
    gold = changed_lines((task_dir / task.get("gold_patch", "gold.diff")).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(task_dir / "repo", repo)
        out = subprocess.run(task["test_command"], shell=True, cwd=repo, capture_output=True, text=True)
        workspace = Workspace(repo)
        output = out.stdout + out.stderr
        with_excerpts = context.gather(workspace, task["description"], output, **caps)
        with mock.patch.object(excerpt, "excerpt", return_value=None):
            with_heads = context.gather(workspace, task["description"], output, **caps)
    total = sum(len(lines) for lines in gold.values()) or 1

    def share(files):
        shown = shown_lines(files)
        return sum(len(lines & shown.get(path, set())) for path, lines in gold.items()) / total

    return share(with_excerpts), share(with_heads), sum(len(f.content) for f in with_excerpts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="?", default="evals/tasks", type=Path)
    parser.add_argument("--max-file-chars", type=int, default=context.MAX_FILE_CHARS)
    parser.add_argument("--max-total-chars", type=int, default=context.MAX_TOTAL_CHARS)
    args = parser.parse_args()
    caps = {"max_file_chars": args.max_file_chars, "max_total_chars": args.max_total_chars}
    rows = []
    for task_dir in sorted(p for p in args.tasks.iterdir() if (p / "task.json").exists()):
        rows.append((task_dir.name, *recall(task_dir, caps)))
        name, ex, head, chars = rows[-1]
        print(f"{name:28} excerpts {ex:5.0%}   heads {head:5.0%}   context {chars:6,} chars", flush=True)
    n = len(rows)
    full_ex = sum(r[1] == 1 for r in rows)
    full_head = sum(r[2] == 1 for r in rows)
    print(f"\nall gold lines shown: excerpts {full_ex}/{n}, heads {full_head}/{n}; "
          f"mean recall excerpts {sum(r[1] for r in rows) / n:.0%}, heads {sum(r[2] for r in rows) / n:.0%}")


if __name__ == "__main__":
    main()
