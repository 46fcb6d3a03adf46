"""import-swebench offline: a small git repository built here (a buggy commit; its fix as `patch`, a new
test as `test_patch`), imported, then check-tasks on the output (the round trip); and one bad instance of
each kind reported without stopping the others."""

import json
import subprocess

import pytest

from deltaserve.cli import main
from deltaserve.evals.check_tasks import check_tasks
from deltaserve.evals.swebench_import import Instance, import_swebench, task_id_for
from deltaserve.evals.task_suite import load_tasks

OPS = "def clamp(x, low, high):\n    return max(low, min(x, low))\n\n\ndef double(x):\n    return 2 * x\n"
OLD_TEST = "from mathlib.ops import double\n\n\ndef test_double():\n    assert double(4) == 8\n"
NEW_TEST = "from mathlib.ops import clamp\n\n\ndef test_clamp_inside():\n    assert clamp(5, 0, 10) == 5\n"


def git(repo, *args):
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def clone(tmp_path):
    """repos/acme__mathlib: a buggy base commit, then a fix commit (code + test) the instance is made of."""
    repo = tmp_path / "repos" / "acme__mathlib"
    (repo / "mathlib").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "docs").mkdir()
    (repo / "mathlib" / "__init__.py").write_text("")
    (repo / "mathlib" / "ops.py").write_text(OPS)
    (repo / "tests" / "test_ops.py").write_text(OLD_TEST)
    (repo / "docs" / "guide.md").write_text("# not needed by the tests\n")
    (repo / "pytest.ini").write_text("[pytest]\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "buggy clamp")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "mathlib" / "ops.py").write_text(OPS.replace("min(x, low)", "min(x, high)"))
    patch = git(repo, "diff")
    git(repo, "commit", "-qam", "fix clamp")
    (repo / "tests" / "test_clamp.py").write_text(NEW_TEST)
    git(repo, "add", "-A")
    test_patch = git(repo, "diff", "--cached")
    git(repo, "commit", "-qm", "test clamp")
    return repo, base, patch, test_patch


def instance(base, patch, test_patch, **changes):
    row = {"instance_id": "acme__mathlib-1", "repo": "acme/mathlib", "base_commit": base, "patch": patch,
           "test_patch": test_patch, "FAIL_TO_PASS": json.dumps(["tests/test_clamp.py::test_clamp_inside"]),
           "PASS_TO_PASS": json.dumps(["tests/test_ops.py::test_double"]),
           "problem_statement": "clamp(5, 0, 10) returns 0 instead of 5", "version": "1.0"}
    return {**row, **changes}


def test_round_trip_through_check_tasks(clone, tmp_path, capsys):
    repo, base, patch, test_patch = clone
    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text(json.dumps(instance(base, patch, test_patch)) + "\n")
    out = tmp_path / "tasks"
    assert main(["eval", "import-swebench", str(jsonl), "--repos", str(repo.parent), "--out", str(out)]) == 0
    assert "imported 1 tasks" in capsys.readouterr().out
    (task,) = load_tasks(out)
    assert task.id == "acme__mathlib-1"
    files = sorted(str(p.relative_to(task.repo_dir)) for p in task.repo_dir.rglob("*") if p.is_file())
    assert files == ["mathlib/__init__.py", "mathlib/ops.py", "pytest.ini", "tests/test_clamp.py",
                     "tests/test_ops.py"]  # docs/ is not needed; the test_patch's new test is there
    assert (task.repo_dir / "mathlib" / "ops.py").read_text() == OPS  # the base commit's (buggy) code
    assert task.gold_diff == patch
    assert task.spec.failing_tests == ["tests/test_clamp.py::test_clamp_inside"]
    assert task.spec.test_command == ("python -m pytest -q tests/test_clamp.py::test_clamp_inside "
                                      "tests/test_ops.py::test_double")
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone
    (check,) = check_tasks([task])
    assert check.ok, check.problems
    assert check.passed_after == 2
    assert main(["eval", "check-tasks", "--tasks-dir", str(out)]) == 0


def test_bad_instances_are_reported_and_the_rest_imported(clone, tmp_path):
    repo, base, patch, test_patch = clone
    lines = [
        instance(base, patch, test_patch, instance_id="acme__mathlib-ok",
                 FAIL_TO_PASS=["tests/test_clamp.py::test_clamp_inside"], PASS_TO_PASS=[]),  # lists too
        instance(base, patch, test_patch, instance_id="other__gone-1", repo="other/gone"),
        instance("0" * 40, patch, test_patch, instance_id="acme__mathlib-nocommit"),
        instance(base, patch.replace("min(x, low)", "min(x, nowhere)"), test_patch,
                 instance_id="acme__mathlib-badpatch"),
        instance(base, patch, test_patch.replace("/dev/null", "a/tests/test_clamp.py"),
                 instance_id="acme__mathlib-badtest"),
    ]
    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text("\n".join(json.dumps(row) for row in lines) + '\n{"instance_id": "half"}\n')
    result = import_swebench(jsonl, repo.parent, tmp_path / "tasks", progress=False)
    assert result.imported == ["acme__mathlib-ok"]
    problems = result.problems
    assert "no git clone of other/gone" in problems["other__gone-1"]
    assert "is not in the clone" in problems["acme__mathlib-nocommit"]
    assert "patch (after test_patch) does not apply" in problems["acme__mathlib-badpatch"]
    assert "test_patch does not apply" in problems["acme__mathlib-badtest"]
    bad_line = problems["instances.jsonl:6"]
    assert "not a SWE-bench instance" in bad_line and "repo" in bad_line
    assert [t.id for t in load_tasks(tmp_path / "tasks")] == ["acme__mathlib-ok"]
    assert main(["eval", "import-swebench", str(jsonl), "--repos", str(repo.parent),
                 "--out", str(tmp_path / "tasks")]) == 1


def test_ids_and_test_lists():
    assert task_id_for("Django__Django-11099.x") == "django__django-11099-x"
    row = Instance.model_validate({"instance_id": "a", "repo": "o/n", "base_commit": "c", "patch": "",
                                   "test_patch": "", "FAIL_TO_PASS": '["t::a"]', "PASS_TO_PASS": []})
    assert row.FAIL_TO_PASS == ["t::a"] and row.PASS_TO_PASS == []


def _symlink_diff(path: str, target: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n")


def _hostile_rows(clone_dir, base, patch, test_patch, host_secret):
    """instance id -> (row, what its refusal says): each would reach outside --repos or the repository."""
    victim = clone_dir.parent.parent / "victim"  # a clone outside --repos
    subprocess.run(["git", "clone", "-q", str(clone_dir), str(victim)], check=True)
    # git apply takes the +++ side's name where the --- side's is an absolute path; unidiff reports both
    absolute_header = test_patch + f"--- {clone_dir}/tests/test_ops.py\n+++ b/tests/test_ops.py\n" + (
        "@@ -5 +5,2 @@\n     assert double(4) == 8\n+    assert double(0) == 0\n")
    many = [f"tests/test_clamp.py::test_{n}" for n in range(60_000)]
    return {
        "link-dir": (dict(test_patch=test_patch + _symlink_diff("leak", str(host_secret.parent))),
                     "symbolic link to a path outside the repository: leak -> "),
        "link-file": (dict(test_patch=test_patch + _symlink_diff("tests/leak.txt", str(host_secret))),
                      "symbolic link"),
        "link-up": (dict(patch=patch + _symlink_diff("mathlib/up", "../../..")),
                    "patch adds a symbolic link"),
        "dotdot-repo": (dict(repo="acme/../victim"), "is not of the form owner/name"),
        "absolute-repo": (dict(repo=f"acme/{victim}"), "is not of the form owner/name"),
        "absolute-path": (dict(test_patch=absolute_header), "a path outside the repository"),
        "huge-command": (dict(FAIL_TO_PASS=many), "more than one command line can carry"),
    }


@pytest.mark.parametrize("hostile", ["link-dir", "link-file", "link-up", "dotdot-repo", "absolute-repo",
                                     "absolute-path", "huge-command"])
def test_an_instance_reaching_outside_is_refused_and_the_others_imported(clone, tmp_path, hostile):
    repo, base, patch, test_patch = clone
    secret = tmp_path / "home" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("host secret\n")
    changes, reason = _hostile_rows(repo, base, patch, test_patch, secret)[hostile]
    rows = [{**instance(base, patch, test_patch, instance_id=hostile), **changes},
            instance(base, patch, test_patch, instance_id="acme__mathlib-ok")]
    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    result = import_swebench(jsonl, repo.parent, tmp_path / "tasks", progress=False)
    assert result.imported == ["acme__mathlib-ok"] and reason in result.problems[hostile], result.problems
    copied = [p.read_text() for p in (tmp_path / "tasks").rglob("*") if p.is_file() and not p.is_symlink()]
    assert "host secret\n" not in copied


def test_instance_ids_that_map_to_one_task_id_do_not_replace_each_other(clone, tmp_path):
    repo, base, patch, test_patch = clone
    rows = [instance(base, patch, test_patch, instance_id="acme/mathlib-1"),
            instance(base, patch, test_patch, instance_id="acme-mathlib-1", problem_statement="the second")]
    jsonl = tmp_path / "instances.jsonl"
    jsonl.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    result = import_swebench(jsonl, repo.parent, tmp_path / "tasks", progress=False)
    assert result.imported == ["acme-mathlib-1"]
    assert "is that of instance 'acme/mathlib-1'" in result.problems["acme-mathlib-1"]
    (task,) = load_tasks(tmp_path / "tasks")
    assert task.spec.description.startswith("clamp(5, 0, 10)")  # the first one's
