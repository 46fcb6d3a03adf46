"""Code whose tests have run is recognised whatever edit gives it again, and such an edit is not applied:
not by the agent, not among a step's candidates. Real files and tests; only the replies are scripted."""

from __future__ import annotations

from deltaserve.harness import Agent
from deltaserve.harness.tried_code import START, code_state
from deltaserve.tools.workspace import Workspace

from .test_candidates import MODEL
from .test_candidates import scripted as scripted_candidates
from .test_regressions import BREAKS_MUL, FIXES_ADD, two_tests  # noqa: F401 (a fixture)
from .test_small_model_replies import run

# BREAKS_MUL's change written another way: a longer SEARCH, another marker style
BREAKS_MUL_AGAIN = ("calc.py\n```\n<<<<<<< SEARCH\ndef mul(a, b):\n    return a * b\n=======\n"
                    "def mul(a, b):\n    return a - b\n>>>>>>> REPLACE\n```\n")


def test_a_state_is_the_files_that_differ_from_the_start(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    ws = Workspace(tmp_path)
    originals = {"a.py": "x = 1\n"}
    assert code_state(ws, {}, {"a.py": "x = 1\n"}) == START  # the code as it was
    changed = code_state(ws, originals, {"a.py": "x = 2\n"})
    assert changed != START and changed == code_state(ws, {}, {"a.py": "x = 2\n"})
    (tmp_path / "a.py").write_text("x = 2\n")  # once written, the same code is the same state
    assert code_state(ws, originals, {}) == changed
    assert code_state(ws, originals, {"a.py": "x = 1\n"}) == START  # an edit undoing it: the start again
    assert code_state(ws, originals, {"new.py": "y\n"}) != changed  # a created file counts
    assert code_state(ws, originals, {"a.py": None}) not in (START, changed)  # so does a deleted one


def test_the_same_change_in_other_words_is_not_tested_again(two_tests, test_cmd):  # noqa: F811
    agent, report, _ = run(two_tests, test_cmd, [BREAKS_MUL, BREAKS_MUL_AGAIN, FIXES_ADD],
                           edit_format="search_replace", max_steps=3)
    assert [s.outcome for s in report.steps] == ["tests worse", "repeated edit", "tests pass"]
    second = report.steps[1]
    assert not second.apply.ok and second.tests is None
    assert "exactly the code your edit at step 1 gave" in agent.prompts[2][-1]["content"]


def test_candidates_giving_the_same_code_are_tested_once(project, quick_test_cmd):
    wrong = "calc.py\n```python\ndef add(a, b):\n    return a * b\n```\n"
    same_code = "calc.py\n```python\ndef add(a, b):\n    return a * b\n\n```\n"  # another text, same file
    right = "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n"
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", candidates=3, max_steps=1,
                  complete=scripted_candidates([wrong, same_code, right], calls))
    (step,) = agent.run().steps
    assert [c.outcome for c in step.candidates] == ["tests fail", "repeated edit", "tests pass"]


def test_a_round_giving_only_tested_code_is_sampled_again(project, quick_test_cmd):
    wrong = "calc.py\n```python\ndef add(a, b):\n    return a * b\n```\n"
    back = "calc.py\n```python\ndef add(a, b):\n    return a - b\n```\n"  # the code at the start again
    back_too = "calc.py\n```python\ndef add(a, b):\n    return a - b\n\n```\n"
    right = "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n"
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", candidates=2, max_steps=2,
                  complete=scripted_candidates([wrong, wrong, wrong, back, back_too, right, right], calls))
    first, second = agent.run().steps
    # step 1: its second candidate repeats the first, so one more is sampled (it repeats too)
    assert first.outcome == "tests fail"
    assert [c.outcome for c in second.candidates][:3] == ["repeated edit", "repeated edit", "tests pass"]
    assert second.resampled and second.outcome == "tests pass"
