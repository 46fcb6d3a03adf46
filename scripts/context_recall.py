"""How often the step-1 prompt shows the lines a task's gold patch changes: the context's recall, per task,
with excerpts of long files (harness/excerpt.py) against the head of each file (the earlier behaviour), and
with the suspects of a coverage run (tools/localize.py) added to the excerpts; and where among those
suspects (ranked) is the first function the gold patch changes.

    python scripts/context_recall.py [evals/tasks] [--max-file-chars N] [--max-total-chars N]

A fix the model is not shown is a fix it must find with VIEW first, which a small model rarely does. No
model runs: the tests run once per task (unsandboxed, in a temporary copy) for the traceback, then the
failing tests' files once more under coverage (also unsandboxed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from unittest import mock

from unidiff import PatchSet

from deltaserve.harness import context, excerpt
from deltaserve.tools.localize import _owners, localize
from deltaserve.tools.tests import run_tests
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


def recall(task_dir: Path, caps: dict) -> tuple[float, float, float, int, int, str]:
    """(share of gold lines shown with excerpts, the same with file heads, the same with excerpts and
    coverage suspects, context chars with excerpts, the same with suspects, where the suspects are)."""
    task = json.loads((task_dir / "task.json").read_text())
    gold = changed_lines((task_dir / task.get("gold_patch", "gold.diff")).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(task_dir / "repo", repo)
        workspace = Workspace(repo)
        tests = run_tests(workspace, task["test_command"], sandbox="none")
        output = tests.output
        with_excerpts = context.gather(workspace, task["description"], output, **caps)
        with mock.patch.object(excerpt, "excerpt", return_value=None):
            with_heads = context.gather(workspace, task["description"], output, **caps)
        found = localize(workspace, tests.failing_tests, task["test_command"], 300, "none",
                         task["description"])
        suspects = found.focus_lines()
        with_suspects = context.gather(workspace, task["description"], output, **caps, suspect_lines=suspects)
    total = sum(len(lines) for lines in gold.values()) or 1

    def share(files):
        shown = shown_lines(files)
        return sum(len(lines & shown.get(path, set())) for path, lines in gold.items()) / total

    if not suspects:
        verdict = "none: " + found.note
    else:
        sources = {path: (task_dir / "repo" / path).read_text() for path in gold
                   if path.endswith(".py") and (task_dir / "repo" / path).exists()}
        fixed = {(path, _owners(source).get(n)) for path, source in sources.items() for n in gold[path]}
        rank = next((i for i, s in enumerate(found.suspects, 1) if (s.path, s.name) in fixed), None)
        verdict = (f"suspect {rank} of {len(found.suspects)} is fixed" if rank else
                   "in a gold file" if set(suspects) & set(gold) else "elsewhere")
    return (share(with_excerpts), share(with_heads), share(with_suspects),
            sum(len(f.content) for f in with_excerpts), sum(len(f.content) for f in with_suspects), verdict)


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
        name, ex, head, sus, chars, sus_chars, where = rows[-1]
        print(f"{name:28} excerpts {ex:5.0%}   heads {head:5.0%}   +suspects {sus:5.0%}   "
              f"context {chars:6,} / {sus_chars:6,} chars   suspects: {where}", flush=True)
    n = len(rows)
    full = [sum(r[i] == 1 for r in rows) for i in (1, 2, 3)]
    mean = [sum(r[i] for r in rows) / n for i in (1, 2, 3)]
    first = sum(r[6].startswith("suspect 1 ") for r in rows)
    fixed = sum(r[6].startswith("suspect") for r in rows)
    in_gold = fixed + sum(r[6] == "in a gold file" for r in rows)
    named = sum(not r[6].startswith("none") for r in rows)
    print(f"\nall gold lines shown: excerpts {full[0]}/{n}, heads {full[1]}/{n}, +suspects {full[2]}/{n}; "
          f"mean recall {mean[0]:.0%}, {mean[1]:.0%}, {mean[2]:.0%}; "
          f"suspects named in {named}/{n} tasks, in a gold file in {in_gold}, the first suspect fixed by the "
          f"gold patch in {first}, one of them in {fixed}")


if __name__ == "__main__":
    main()
