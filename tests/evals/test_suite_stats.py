"""Gold-patch statistics, and the bundled suite's shape: its fixes look like real bug fixes."""

import json

from deltaserve.evals.suite_stats import gold_patch_stats, main, summarize
from deltaserve.evals.task_suite import load_tasks

TWO_FILE_DIFF = """\
diff --git a/pkg/a.py b/pkg/a.py
--- a/pkg/a.py
+++ b/pkg/a.py
@@ -1,3 +1,3 @@
 x = 1
-y = 2
+y = 3
 z = 4
@@ -10,2 +10,3 @@
 p = 1
+q = 2
 r = 3
diff --git a/pkg/b.py b/pkg/b.py
--- a/pkg/b.py
+++ b/pkg/b.py
@@ -1,2 +1,1 @@
-import os
 import sys
"""


def _one_task_suite(tmp_path, diff):
    task = tmp_path / "tasks" / "t-one"
    (task / "repo").mkdir(parents=True)
    spec = {"id": "t-one", "description": "something is broken", "failing_tests": ["tests/test_x.py::test_x"]}
    (task / "task.json").write_text(json.dumps(spec))
    (task / "gold.diff").write_text(diff)
    return tmp_path / "tasks"


def test_counts_added_removed_hunks_and_files(tmp_path):
    (task,) = load_tasks(_one_task_suite(tmp_path, TWO_FILE_DIFF))
    stats = gold_patch_stats(task)
    assert (stats.added, stats.removed, stats.hunks, stats.files, stats.changed) == (2, 2, 3, 2, 4)


def test_main_prints_a_row_per_task_and_the_spread(tmp_path, capsys):
    assert main([str(_one_task_suite(tmp_path, TWO_FILE_DIFF))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["t-one", "4", "+2/-2", "3", "2"]
    assert out[-1].startswith("1 tasks: changed lines median 4 (min 4, max 4); hunks median 3")


def test_bundled_gold_patches_are_not_mostly_one_liners():
    stats = [gold_patch_stats(t) for t in load_tasks()]
    assert summarize(stats)["changed_median"] > 2
    realistic = [s for s in stats if 3 <= s.changed <= 25 and 2 <= s.hunks <= 4]
    assert len(realistic) >= 8, [s.task_id for s in realistic]
    assert sum(s.files > 1 for s in realistic) >= 3
