"""run_tests: real subprocesses — pytest summaries, a hang, forked hanging children, a 100 MB flood.

The tests that read host pids back run unsandboxed (`sandbox="none"`: inside bwrap `$$` is a pid of the
sandbox's own namespace); the same kills inside the sandbox are checked by the processes' working
directories, and test_sandbox.py covers the rest of it."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import textwrap

import pytest

from deltaserve.tools.sandbox import INSTALL_HINT, bwrap_problem
from deltaserve.tools.test_output import (
    failing_test_names,
    parse_pytest_output,
    parse_test_output,
    parse_unittest_output,
    without_durations,
)
from deltaserve.tools.tests import import_roots, is_test_path, run_tests
from deltaserve.tools.workspace import Workspace

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}; {INSTALL_HINT}")
NO_PLUGINS = {
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"
}  # third-party plugin imports are slow and irrelevant here


def _alive(pid: int) -> bool:
    """True if pid exists and is not a zombie (zombies are dead, just not yet reaped by their parent)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def _pids(path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def test_pytest_counts_and_failing_ids(workspace):
    ws = workspace({
        "test_mix.py": textwrap.dedent("""
            import pytest

            def test_ok():
                assert 1 + 1 == 2

            def test_ok2():
                pass

            def test_bad():
                assert 1 == 2

            @pytest.fixture
            def broken():
                raise RuntimeError("fixture broke")

            def test_err(broken):
                pass
        """),
    })
    res = run_tests(ws, "python -m pytest -q -p no:cacheprovider", timeout=120, env=NO_PLUGINS)
    assert not res.timed_out
    assert res.exit_code == 1
    assert (res.passed, res.failed, res.errors) == (2, 1, 1)
    assert res.failing_tests == ["test_mix.py::test_bad", "test_mix.py::test_err"]
    assert not res.ok
    assert res.summary() == ("exit code 1: 2 passed, 1 failed, 1 errors\n"
                             "failing: test_mix.py::test_bad, test_mix.py::test_err")


def test_passing_suite_is_ok(workspace):
    ws = workspace({"test_a.py": "def test_a():\n    assert True\n"})
    res = run_tests(
        ws, ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"], timeout=120, env=NO_PLUGINS
    )
    assert res.ok and res.passed == 1 and res.failing_tests == []
    assert res.duration_s > 0


def test_hanging_command_is_killed(workspace):
    ws = workspace({})
    res = run_tests(ws, "echo started; echo $$ > pids; sleep 300", timeout=1.0, sandbox="none")
    assert res.timed_out and not res.ok
    assert "started" in res.output
    assert not any(_alive(p) for p in _pids(ws.root / "pids"))


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_forked_hanging_children_are_killed(workspace, running_in, sandbox):
    """Children and grandchildren that hang (and ignore SIGTERM) die with the group, timeout or not."""
    ws = workspace({})
    script = (
        "trap '' TERM; "
        "(trap '' TERM; sleep 300) & echo $! >> pids; "
        "(sh -c 'trap \"\" TERM; sleep 300 & echo $! >> pids; wait') & echo $! >> pids; "
        "python -c 'import os,time; open(\"pids\",\"a\").write(str(os.getpid())+\"\\n\"); time.sleep(300)' & "
        "sleep 0.5; echo $$ >> pids; sleep 300"
    )
    res = run_tests(ws, script, timeout=3.0, sandbox=sandbox)
    assert res.timed_out
    pids = _pids(ws.root / "pids")
    assert len(pids) >= 4
    if sandbox == "none":
        assert [p for p in pids if _alive(p)] == []
    assert running_in(ws.root) == []


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_background_children_do_not_outlive_a_normal_exit(workspace, running_in, sandbox):
    ws = workspace({})
    res = run_tests(ws, "sleep 300 & echo $! > pids; sleep 0.2; echo done", timeout=60, sandbox=sandbox)
    assert not res.timed_out and res.exit_code == 0
    assert "done" in res.output
    if sandbox == "none":
        assert not any(_alive(p) for p in _pids(ws.root / "pids"))
    assert running_in(ws.root) == []


def test_100mb_of_output_is_capped(workspace):
    ws = workspace({})
    cmd = ("python -c \"import sys; [sys.stdout.write('x' * 1023 + '\\n') for _ in range(100 * 1024)]; "
           "print('THE END')\"")
    res = run_tests(ws, cmd, timeout=120, head_bytes=4000, tail_bytes=6000, max_output_bytes=None)
    assert res.exit_code == 0 and not res.timed_out
    assert res.output_truncated
    assert len(res.output) < 4000 + 6000 + 200
    assert "bytes of output cut" in res.output
    assert res.output.rstrip().endswith("THE END")
    cut = int(res.output.split("[... ")[1].split(" bytes")[0])
    assert cut == 100 * 1024 * 1024 + len("THE END\n") - 4000 - 6000


def test_flood_that_hangs_is_killed_and_capped(workspace):
    ws = workspace({})
    res = run_tests(ws, "echo $$ > pids; exec yes flood", timeout=1.0, head_bytes=1000, tail_bytes=1000,
                    sandbox="none", max_output_bytes=None)
    assert res.timed_out and res.output_truncated
    assert len(res.output) < 2200
    pids = _pids(ws.root / "pids")
    assert len(pids) == 1 and not _alive(pids[0])


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_flood_past_the_output_limit_is_stopped(workspace, running_in, sandbox):
    ws = workspace({})
    res = run_tests(ws, "exec yes flood", timeout=120, head_bytes=1000, tail_bytes=1000, sandbox=sandbox,
                    max_output_bytes=10 << 20)
    assert res.output_limit_exceeded and not res.timed_out and not res.ok
    assert res.summary().startswith("STOPPED") and res.output_truncated
    assert running_in(ws.root) == []


def test_missing_command(workspace):
    ws = workspace({})
    res = run_tests(ws, ["definitely-not-a-command-xyz"], timeout=10)
    assert res.exit_code is None and "could not start" in res.output
    res = run_tests(ws, "definitely-not-a-command-xyz", timeout=10)
    assert res.exit_code == 127 and not res.ok


@pytest.mark.parametrize("text,expected", [
    ("==== 3 failed, 10 passed, 1 error in 0.52s ====", (10, 3, 1)),
    ("12 passed in 0.01s", (12, 0, 0)),
    ("1 failed, 1 passed, 2 warnings in 1.03s (0:00:01)", (1, 1, 0)),
    ("=== 2 errors in 0.10s ===", (0, 0, 2)),
    ("no tests ran in 0.01s", (0, 0, 0)),
])
def test_parse_summary(text, expected):
    assert parse_pytest_output("some output\n" + text + "\n")[:3] == expected


UNITTEST_MODULE = textwrap.dedent("""
    import unittest


    class CalcTests(unittest.TestCase):
        def test_ok(self):
            self.assertEqual(1 + 1, 2)

        def test_wrong(self):
            self.assertEqual(1 + 1, 3)

        def test_broken(self):
            raise KeyError("x")

        @unittest.skip("later")
        def test_skipped(self):
            pass

        @unittest.expectedFailure
        def test_known_bug(self):
            self.assertEqual(1, 2)
""")


def test_unittest_runs_are_counted(workspace):
    ws = workspace({"tests/__init__.py": "", "tests/test_calc.py": UNITTEST_MODULE})
    res = run_tests(ws, "python -m unittest", timeout=60, sandbox="none")
    assert not res.ok and (res.passed, res.failed, res.errors) == (1, 1, 1)
    assert sorted(res.failing_tests) == ["tests.test_calc.CalcTests.test_broken",
                                         "tests.test_calc.CalcTests.test_wrong"]


@pytest.mark.parametrize("text,expected", [
    # Python before 3.11 names the class only; Django's runner prints the same headers
    ("FAIL: test_add (app.tests.CalcTests)\n---\nRan 4 tests in 0.01s\n\nFAILED (failures=1, skipped=2)",
     (1, 1, 0, ["app.tests.CalcTests.test_add"])),
    ("Ran 3 tests in 0.000s\n\nOK (expected failures=1)", (2, 0, 0, [])),
    ("UNEXPECTED SUCCESS: test_x (m.T.test_x)\nRan 2 tests in 0.1s\n\nFAILED (unexpected successes=1)",
     (1, 1, 0, ["m.T.test_x"])),
    ("Ran 0 tests in 0.000s\n\nNO TESTS RAN", (0, 0, 0, [])),
])
def test_parse_unittest_summary(text, expected):
    assert parse_unittest_output("output\n" + text + "\n") == expected


@pytest.mark.parametrize("text,expected", [
    # cargo test: the unit tests' binary and an integration test's, summed
    ("running 3 tests\ntest tests::later ... ignored\ntest tests::adds ... FAILED\n"
     "test tests::zero ... ok\n\n"
     "test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
     "test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s",
     (5, 1, 0, ["tests::adds"])),
    ("=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\n=== RUN   TestMul\n--- PASS: TestMul (0.00s)\n"
     "    --- FAIL: TestMul/negative (0.00s)\nFAIL\nFAIL\texample.com/calc\t0.002s",
     (1, 2, 0, ["TestAdd", "TestMul/negative"])),
    ("Test Suites: 1 failed, 1 total\nTests:       1 failed, 2 passed, 3 total\nSnapshots:   0 total",
     (2, 1, 0, [])),
    (" Test Files  1 failed (1)\n      Tests  1 failed | 4 passed (5)\n   Start at  10:00:00", (4, 1, 0, [])),
    ("TAP version 13\nok 1 - parses\nnot ok 2 - adds\n  ---\n  ...\nok 3 - later # SKIP no db\n"
     "    not ok 1 - a subtest\n1..3", (1, 1, 0, ["adds"])),
    ("make: *** [check] Error 1", (0, 0, 0, [])),
])
def test_other_runners_summaries(text, expected):
    assert parse_test_output("output\n" + text + "\n") == expected


CARGO_CRATE = {"Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
               "src/lib.rs": "pub fn add(a: i32, b: i32) -> i32 { a - b }\n\n#[cfg(test)]\nmod tests {\n"
                             "    use super::*;\n    #[test]\n    fn adds() { assert_eq!(add(1, 2), 3); }\n"
                             "    #[test]\n    fn zero() { assert_eq!(add(0, 0), 0); }\n}\n"}
NODE_PROJECT = {"calc.js": "exports.add = (a, b) => a - b;\n",
                "calc.test.js": "const test = require('node:test');\nconst assert = require('node:assert');\n"
                                "const {add} = require('./calc');\n"
                                "test('adds', () => { assert.strictEqual(add(1, 2), 3); });\n"
                                "test('zero', () => { assert.strictEqual(add(0, 0), 0); });\n"}


@pytest.mark.parametrize(("tool", "files", "command", "failing"), [
    ("cargo", CARGO_CRATE, "cargo test --offline", "tests::adds"),
    ("node", NODE_PROJECT, "node --test", "adds"),
])
def test_real_runs_of_other_runners_are_counted(workspace, tool, files, command, failing):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    res = run_tests(workspace(files), command, timeout=120, sandbox="none")
    assert (res.passed, res.failed, res.failing_tests) == (1, 1, [failing]), res.output


def test_run_times_are_taken_out_of_the_summaries_and_nothing_else():
    out = ("3 failed, 6 passed in 0.04s\n====== 1 failed in 1.03s (0:00:01) ======\nRan 9 tests in 0.003s\n"
           "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out;"
           " finished in 0.00s\n"
           "--- FAIL: TestAdd (0.00s)\nok  \texample.com/calc\t0.002s\n  duration_ms: 1.47\n"
           "Time:        1.23 s, estimated 2 s\nE   assert wait(0.5) took 10s in 0.04s")
    assert without_durations(out) == (
        "3 failed, 6 passed\n====== 1 failed ======\nRan 9 tests\n"
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n"
        "--- FAIL: TestAdd\nok  \texample.com/calc\n  duration_ms:\nTime:\n"
        "E   assert wait(0.5) took 10s in 0.04s")
    assert parse_test_output(without_durations(out))[:3] == parse_test_output(out)[:3]


def test_failing_test_names_from_pytest_ids_and_unittest_headers():
    out = ("FAILED tests/t.py::TestX::test_y - assert 1\nFAIL: test_add (app.tests.CalcTests.test_add)\n"
           "ERROR: test_old (app.tests.OldTests)\n")
    assert failing_test_names(out) == ["TestX", "test_y", "test_add", "CalcTests", "test_old", "OldTests"]


def test_env_and_cwd(workspace):
    ws = workspace({"marker.txt": "here\n"})
    res = run_tests(ws, "cat marker.txt; echo $EXTRA_VAR", env={"EXTRA_VAR": "set"}, timeout=30)
    assert "here" in res.output and "set" in res.output
    assert os.path.exists(ws.root / "marker.txt")


@pytest.mark.parametrize(("path", "is_test"), [
    ("test_calc.py", True), ("tests/helpers.py", True), ("pkg/calc_test.py", True), ("conftest.py", True),
    ("web/app.spec.ts", True), ("pkg/calc.py", False), ("pkg/testing_utils.py", False),
    ("contest.py", False),
])
def test_is_test_path(path, is_test):
    assert is_test_path(path) is is_test


@pytest.mark.parametrize("box", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_a_copy_of_an_editable_install_tests_its_own_code(tmp_path, box):
    """A src-layout project installed in editable mode (the old-style .pth line that points at its src/,
    in the project's own .venv) imports its original code from anywhere; a fixed copy must test the fix
    (inside bwrap the original, under the private /tmp, is not even there to import)."""
    original = tmp_path / "proj"
    (original / "src" / "mypkg").mkdir(parents=True)
    (original / "src" / "mypkg" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (original / "tests").mkdir()
    (original / "tests" / "test_add.py").write_text("from mypkg import add\n\n\ndef test_add():\n"
                                                    "    assert add(1, 2) == 3\n")
    venv = original / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site_dir,) = (venv / "lib").glob("python*/site-packages")
    ours = [p for p in site.getsitepackages() if os.path.isdir(os.path.join(p, "pytest"))]
    (site_dir / "editable_mypkg.pth").write_text("\n".join([*ours, str(original / "src")]) + "\n")
    copy = tmp_path / "copy"
    shutil.copytree(original, copy, symlinks=True)
    (copy / "src" / "mypkg" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    command = ".venv/bin/python -m pytest -q -p no:cacheprovider tests"
    assert run_tests(Workspace(original), command, timeout=60, env=NO_PLUGINS, sandbox=box).failed == 1
    fixed = run_tests(Workspace(copy), command, timeout=60, env=NO_PLUGINS, sandbox=box)
    assert fixed.ok and fixed.passed == 1, fixed.output


def test_import_roots_are_the_root_and_source_folders_holding_packages(workspace):
    ws = workspace({"src/pkg/__init__.py": "", "lib/notes.txt": "", "app.py": "",
                    # a monorepo's projects: src layout, flat layout, and a folder that is no project
                    "packages/core/pyproject.toml": "", "packages/core/src/core/__init__.py": "",
                    "packages/cli/setup.py": "", "packages/cli/cli/__init__.py": "",
                    "docs/src/example/__init__.py": "", ".venv/lib/site/__init__.py": ""})
    assert import_roots(ws) == [str(ws.root), str(ws.root / "src"), str(ws.root / "packages/cli"),
                                str(ws.root / "packages/core/src")]


def test_a_run_that_ran_no_test_says_why(tmp_path):
    """A command not found, not executable, or a pytest session that collected nothing ran no test: no edit
    can make it pass (the agent stops there); a run with failing tests, or a command's own exit code 5
    without pytest's words, is a run of tests."""
    ws = Workspace(tmp_path)
    missing = run_tests(ws, "no_such_command_xyz", sandbox="none")
    assert missing.not_run.startswith("the test command was not found (exit code 127: ")
    assert "no_such_command_xyz" in missing.not_run
    (tmp_path / "run.sh").write_text("#!/bin/sh\nexit 0\n")  # no execute bit
    assert run_tests(ws, "./run.sh", sandbox="none").not_run.startswith("the test command is not executable")
    pytest_cmd = f"{sys.executable} -m pytest -q"
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    empty = run_tests(ws, pytest_cmd, sandbox="none", env=NO_PLUGINS)
    assert empty.exit_code == 5 and empty.not_run.startswith("no tests were collected (exit code 5: ")
    test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    (tmp_path / "test_calc.py").write_text(test)
    failing = run_tests(ws, pytest_cmd, sandbox="none", env=NO_PLUGINS)
    assert failing.failed == 1 and failing.not_run == ""
    assert run_tests(ws, "exit 5", sandbox="none").not_run == ""
