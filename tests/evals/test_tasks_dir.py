"""`--tasks-dir`: the three eval commands on a suite outside the package; malformed tasks named clearly."""

import json

import pytest

from deltaserve.cli import main
from deltaserve.errors import TaskError
from deltaserve.evals.task_suite import load_tasks

TASKS = {
    "ext-add": ("def add(a, b):\n    return a - b\n", "from calc import add\n\n\ndef test_add():\n"
                "    assert add(2, 3) == 5\n", "-    return a - b\n+    return a + b\n"),
    "ext-mul": ("def mul(a, b):\n    return a + b\n", "from calc import mul\n\n\ndef test_mul():\n"
                "    assert mul(2, 3) == 6\n", "-    return a + b\n+    return a * b\n"),
}


def write_task(root, task_id, source, test, change):
    task = root / task_id
    (task / "repo" / "tests").mkdir(parents=True)
    (task / "repo" / "calc.py").write_text(source)
    (task / "repo" / "tests" / "test_calc.py").write_text(test)
    (task / "repo" / "conftest.py").write_text("")  # puts repo/ on sys.path for the tests
    header = source.splitlines(keepends=True)[0]
    (task / "gold.diff").write_text(f"--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n {header}{change}")
    test_name = test.split("def ")[1].split("(")[0]
    (task / "task.json").write_text(json.dumps({
        "id": task_id, "description": f"{task_id}: the function computes the wrong operation",
        "failing_tests": [f"tests/test_calc.py::{test_name}"]}))
    return task


@pytest.fixture
def suite(tmp_path):
    root = tmp_path / "my-tasks"
    for task_id, parts in TASKS.items():
        write_task(root, task_id, *parts)
    return root


def test_check_tasks_on_an_external_folder(suite, capsys):
    assert [t.id for t in load_tasks(suite)] == ["ext-add", "ext-mul"]
    assert main(["eval", "check-tasks", "--tasks-dir", str(suite)]) == 0
    assert "2/2 tasks ok" in capsys.readouterr().out


def test_decode_cost_on_an_external_folder(suite, tiny_llama_8k, tmp_path):
    out = tmp_path / "dc"
    assert main(["eval", "decode-cost", "--tasks-dir", str(suite), "--model", str(tiny_llama_8k),
                 "--formats", "whole,udiff", "--no-replay", "--max-reply-tokens", "8", "--dtype", "float32",
                 "--threads", "1", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {(r["task"], r["format"]) for r in rows if r["kind"] == "decode_cost"} == {
        (t, f) for t in TASKS for f in ("whole", "udiff")}
    assert all(r["edited_file"] == "calc.py" for r in rows if r["kind"] != "run")


def test_agent_on_an_external_folder(suite, tiny_llama_8k, tmp_path):
    out = tmp_path / "agent"
    assert main(["eval", "agent", "--tasks-dir", str(suite), "--models", f"local/{tiny_llama_8k}",
                 "--formats", "udiff", "--max-steps", "1", "--max-tokens", "8", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    agent_rows = [r for r in rows if r["kind"] == "agent"]
    assert sorted(r["task"] for r in agent_rows) == ["ext-add", "ext-mul"]
    assert not any(r["solved"] for r in agent_rows)  # random weights cannot fix a bug in 8 tokens


@pytest.mark.parametrize(("edit", "field"), [
    (lambda spec: spec.pop("failing_tests"), "failing_tests"),
    (lambda spec: spec.update(failing_tests="tests/test_calc.py::test_add"), "failing_tests"),
    (lambda spec: spec.update(tags=[1]), "tags.0"),
    (lambda spec: spec.update(colour="red"), "colour"),
    (lambda spec: spec.update(id="ext-other"), "id"),
    (lambda spec: spec.update(gold_patch="fix.diff"), "gold_patch"),
])
def test_a_malformed_task_names_its_file_and_field(suite, capsys, edit, field):
    path = suite / "ext-mul" / "task.json"
    spec = json.loads(path.read_text())
    edit(spec)
    path.write_text(json.dumps(spec))
    with pytest.raises(TaskError) as exc:
        load_tasks(suite)
    assert str(path) in exc.value.message and f"field '{field}'" in exc.value.message
    assert main(["eval", "check-tasks", "--tasks-dir", str(suite)]) == 1
    assert f"field '{field}'" in capsys.readouterr().err


def test_broken_json_and_missing_folders(suite, tmp_path):
    (suite / "ext-add" / "task.json").write_text("{not json")
    with pytest.raises(TaskError, match=r"ext-add/task.json: not valid JSON"):
        load_tasks(suite)
    with pytest.raises(TaskError, match="not a directory of tasks"):
        load_tasks(tmp_path / "nowhere")
