"""An edit that leaves the tests worse than before it is undone, byte for byte, and the model is told; with
keep_worse_edits it stays. A real project with two tests (one failing), real pytest; only the replies are
scripted."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from deltaserve.harness.regressions import regressed
from deltaserve.tools.checkpoint import Checkpoint
from deltaserve.tools.workspace import Workspace

from .test_small_model_replies import run

CALC = "def add(a, b):\r\n    return a - b\r\n\r\n\r\ndef mul(a, b):\r\n    return a * b\r\n"  # CRLF kept
TESTS = ("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
# a 1.5B-style wrong fix: it "fixes" the operator of the function that was right
BREAKS_MUL = "calc.py\n```\nSEARCH\n    return a * b\n=======\n    return a - b\nREPLACE\n```\n"
FIXES_ADD = "calc.py\n```\nSEARCH\n    return a - b\n=======\n    return a + b\nREPLACE\n```\n"


def outcome(passed, failed, errors=0):
    return SimpleNamespace(passed=passed, failed=failed, errors=errors)


@pytest.mark.parametrize(("after", "before", "worse"), [
    (outcome(0, 2), outcome(1, 1), True),  # fewer passing
    (outcome(0, 0, errors=1), outcome(3, 1), True),  # an import broken: one collection error, nothing passes
    (outcome(1, 2), outcome(1, 1), True),  # as many passing, more failing
    (outcome(1, 1), outcome(1, 1), False),  # no better, no worse: kept (its diff is the next step's code)
    (outcome(2, 3), outcome(1, 1), False),  # more passing
])
def test_worse_is_fewer_passing_or_as_many_and_more_failing(after, before, worse):
    assert regressed(after, before) is worse


@pytest.fixture
def two_tests(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_bytes(CALC.encode())
    (root / "test_calc.py").write_text(TESTS)
    return root


def test_an_edit_that_breaks_a_passing_test_is_undone_and_the_model_told(two_tests, test_cmd):
    agent, report, _ = run(two_tests, test_cmd, [BREAKS_MUL, FIXES_ADD], edit_format="search_replace",
                           max_steps=2)
    first, second = report.steps
    assert first.outcome == "tests worse" and first.apply.ok and first.apply.undone
    assert (first.tests.passed, first.tests.failed) == (0, 2)
    told = agent.prompts[1][-1]["content"]
    assert "before it 1 passed and 1 failed, after it 0 passed and 2 failed" in told and "undone" in told
    assert "-    return a * b" in told  # the diff it made is still shown
    # the next step starts from the code as it was: its SEARCH for `a - b` finds add() only
    assert second.outcome == "tests pass" and report.solved
    assert (two_tests / "calc.py").read_bytes() == CALC.replace("a - b", "a + b").encode()
    assert "-    return a * b" not in report.final_diff


def test_the_undone_file_is_restored_byte_for_byte(two_tests, test_cmd):
    _, report, _ = run(two_tests, test_cmd, [BREAKS_MUL], edit_format="search_replace", max_steps=1)
    assert report.steps[0].outcome == "tests worse"
    assert (two_tests / "calc.py").read_bytes() == CALC.encode() and report.final_diff == ""


def test_keep_worse_edits_keeps_it(two_tests, test_cmd):
    _, report, _ = run(two_tests, test_cmd, [BREAKS_MUL], edit_format="search_replace", max_steps=1,
                       keep_worse_edits=True)
    assert report.steps[0].outcome == "tests fail" and not report.steps[0].apply.undone
    broken = CALC.replace("a * b", "a - b").encode()
    assert (two_tests / "calc.py").read_bytes() == broken


def test_a_checkpoint_restores_modes_and_removes_created_files(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    os.chmod(script, 0o755)
    ws = Workspace(tmp_path)
    checkpoint = Checkpoint(ws, ["run.sh", "new/module.py"])
    script.write_text("echo new\n")
    os.chmod(script, 0o644)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "module.py").write_text("x = 1\n")
    checkpoint.restore()
    assert script.read_text() == "#!/bin/sh\necho old\n" and os.stat(script).st_mode & 0o777 == 0o755
    assert not (tmp_path / "new" / "module.py").exists()
