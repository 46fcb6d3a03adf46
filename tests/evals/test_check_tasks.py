"""check-tasks over the whole suite (in the default sandbox: bwrap wherever it runs, so every task's suite
passes inside it), and that it catches broken tasks."""

import shutil

from deltaserve.cli import main
from deltaserve.evals.check_tasks import check_task, check_tasks
from deltaserve.evals.task_suite import load_tasks


def test_every_task_fails_before_and_passes_after_its_gold_patch():
    tasks = load_tasks()
    assert tasks, "no tasks in evals/tasks"
    checks = check_tasks(tasks, workers=2)
    bad = {c.task_id: c.problems for c in checks if not c.ok}
    assert not bad, bad
    for task, check in zip(tasks, checks, strict=True):
        assert sorted(check.failing_before) == sorted(task.spec.failing_tests)
        assert check.passed_after >= len(task.spec.failing_tests)


def _broken_suite(tmp_path):
    """A one-task suite copied from the real first task, to break on purpose."""
    task = load_tasks()[0]
    dest = tmp_path / "tasks" / task.id
    shutil.copytree(task.root, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return load_tasks(tmp_path / "tasks")[0], dest


def test_a_gold_patch_that_does_not_apply_is_reported(tmp_path):
    task, dest = _broken_suite(tmp_path)
    (dest / "gold.diff").write_text("")
    check = check_task(task)
    assert not check.ok and any("gold patch" in p for p in check.problems)


def test_wrong_failing_test_ids_are_reported_and_cli_exits_nonzero(tmp_path, capsys):
    task, dest = _broken_suite(tmp_path)
    spec = task.spec.model_copy(update={"failing_tests": ["tests/test_nope.py::test_missing"]})
    (dest / "task.json").write_text(spec.model_dump_json())
    check = check_task(load_tasks(tmp_path / "tasks")[0])
    assert not check.ok and "failing before: expected" in check.problems[0]
    assert main(["eval", "check-tasks", "--tasks-dir", str(tmp_path / "tasks"), "--sandbox", "none"]) == 1
    assert "0/1 tasks ok" in capsys.readouterr().out
