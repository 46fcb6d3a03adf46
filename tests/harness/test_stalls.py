"""Steps that change nothing escalate: sampling after the first, hotter and (auto) another format after the
second in a row; after a no-op edit the model is pointed at the code the failing test runs. Real projects,
real tests; only the replies are scripted."""

from __future__ import annotations

import sys

import pytest

from deltaserve.harness import Agent
from deltaserve.harness.fault_hints import called_definitions, fault_hint, traceback_sites
from deltaserve.harness.formats import auto
from deltaserve.harness.stalls import MAX_TEMPERATURE, StallPolicy
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

from .test_small_model_replies import MODEL, reply, run, scripted

FIXED_FILE = ("calc.py\n```python\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
              "```\n")


def test_the_policy_samples_after_one_stall_and_heats_up_after_more():
    policy = StallPolicy(base_temperature=0.0, resample_temperature=0.7)
    assert policy.temperature() == 0.0 and policy.avoid() == []
    policy.record("no-op edit", "whole")
    assert policy.temperature() == 0.7 and policy.avoid() == []
    policy.record("repeated reply", "symbol")
    assert policy.temperature() > 0.7 and policy.avoid() == ["whole", "symbol"]
    for _ in range(10):
        policy.record("no-op edit", "symbol")
    assert policy.temperature() == MAX_TEMPERATURE
    policy.record("tests fail", "udiff")  # a step that changed something ends the run of stalls
    assert policy.avoid() == [] and policy.temperature() == 0.7  # still sampling
    policy.record("no-op edit", "symbol")
    policy.record("no-op edit", "symbol")
    policy.switched_format()  # auto moved to a format that has not stalled: greedy, still avoiding symbol
    assert policy.temperature() == 0.0 and policy.avoid() == ["symbol"]
    policy.record("no-op edit", "whole")
    assert policy.temperature() == 0.7 and policy.avoid() == ["symbol", "whole"]


def test_two_no_op_replies_in_a_row_change_the_format_and_go_back_to_greedy(project, quick_test_cmd):
    no_op = (project / "calc.py").read_text()
    retyped = f"calc.py\n```python\n{no_op}```\n"
    retyped_again = f"calc.py\n```\n{no_op}```\n"  # the same no-op written another way: not a repeat
    replies = [retyped, retyped_again, reply("symbol_function.txt")]
    agent, report, calls = run(project, quick_test_cmd, replies, edit_format="auto", max_steps=3)
    assert [s.outcome for s in report.steps] == ["no-op edit", "no-op edit", "tests pass"]
    first, second, third = report.steps
    assert third.edit_format not in (first.edit_format, second.edit_format)
    assert "changed nothing" in third.format_reason
    assert calls[0]["temperature"] == 0.0 < calls[1]["temperature"] and "seed" in calls[1]
    assert calls[2]["temperature"] == 0.0  # the new format's first reply is greedy
    # the new format is described in the message that asks for it; the system message stays as sent
    assert auto.switch_note(third.edit_format) in agent.prompts[2][-1]["content"]
    assert agent.prompts[2][0] == agent.prompts[0][0]
    assert agent.prompts[0][0]["content"].endswith(auto.opening(first.edit_format))


def test_progress_after_a_stall_keeps_sampling_without_escalating(project, quick_test_cmd):
    wrong = reply("sr_bare_markers.txt").replace("a + b", "a // b")
    _, report, calls = run(project, quick_test_cmd, [reply("sr_no_op.txt"), wrong, FIXED_FILE],
                           edit_format="auto", max_steps=3)
    assert [s.outcome for s in report.steps][:2] == ["no-op edit", "tests fail"]
    assert calls[1]["temperature"] == calls[2]["temperature"] > 0


def callee_project(tmp_path):
    (tmp_path / "calc.py").write_text("def _combine(a, b):\n    return a - b\n\n\n"
                                      "def add(a, b):\n    return _combine(a, b)\n\n\n"
                                      "def mul(a, b):\n    return a * b\n")
    (tmp_path / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                           "    assert add(2, 3) == 5\n")
    return tmp_path


def test_a_no_op_edit_points_at_the_callees_of_the_code_under_test(tmp_path):
    project = callee_project(tmp_path)
    retyped_add = "calc.py\n```python\ndef add(a, b):\n    return _combine(a, b)\n```\n"
    fix = "calc.py\n```python\ndef _combine(a, b):\n    return a + b\n```\n"
    cmd = f"{sys.executable} -m pytest -q -x -p no:cacheprovider"
    agent, report, _ = run(project, cmd, [retyped_add, fix], edit_format="symbol", max_steps=2)
    assert [s.outcome for s in report.steps] == ["no-op edit", "tests pass"]
    told = agent.prompts[1][-1]["content"]
    assert "exactly as they were" in told and "which calls _combine" in told


def test_traceback_sites_name_the_non_test_frames_innermost_last(tmp_path):
    (tmp_path / "calc.py").write_text("def _scale(x):\n    return 10 / x\n\n\ndef ratio(a):\n"
                                      "    return _scale(a)\n")
    (tmp_path / "test_calc.py").write_text("from calc import ratio\n\n\ndef test_ratio():\n"
                                           "    assert ratio(0) == 1\n")
    ws = Workspace(tmp_path)
    output = run_tests(ws, f"{sys.executable} -m pytest -q -x -p no:cacheprovider", sandbox="none").output
    assert traceback_sites(ws, output) == ["calc.py:6 (in ratio)", "calc.py:2"]
    hint = fault_hint(ws, ["calc.py"], output, "ratio() divides by zero")
    assert "calls _scale" in hint and "calc.py:6 (in ratio), calc.py:2" in hint


def test_called_definitions_reads_methods_and_ignores_what_the_file_does_not_define():
    source = ("import math\n\n\nclass Box:\n    def area(self):\n        return self._side() ** 2\n\n"
              "    def _side(self):\n        return math.sqrt(4)\n")
    assert called_definitions(source, ["area"]) == (["Box.area"], ["Box._side"])
    assert called_definitions(source, ["missing"]) == ([], [])
    assert called_definitions("def broken(:\n", ["broken"]) == ([], [])


def test_called_definitions_leaves_out_the_exceptions_a_function_raises():
    source = ("class InvalidName(ValueError):\n    pass\n\n\ndef _norm(s):\n    return s.lower()\n\n\n"
              "def canonical(name, validate=False):\n    if validate and not name:\n"
              "        raise InvalidName(f'bad {_quote(name)}')\n    return _norm(name)\n\n\n"
              "def _quote(s):\n    return repr(s)\n")
    assert called_definitions(source, ["canonical"]) == (["canonical"], ["_norm"])


@pytest.mark.parametrize(("asked_before", "greedy_again"), [
    (["udiff"], True),
    (["udiff", "whole", "symbol", "search_replace"], False),
])
def test_only_a_format_not_asked_for_before_goes_back_to_greedy(project, quick_test_cmd, asked_before,
                                                                greedy_again):
    """After two stalls in udiff, auto moves on; a format this run has not asked for yet is a new question
    (greedy), one it asked for before would get its old greedy reply back, so sampling stays on."""
    agent = Agent(project, "add() is wrong", test_cmd=quick_test_cmd, model=MODEL, edit_format="auto",
                  complete=scripted([], []))
    agent.state.seen = agent.state.shown = ["calc.py"]
    agent.state.described = list(asked_before)
    agent.state.stalls.record("no-op edit", "udiff")
    agent.state.stalls.record("no-op edit", "udiff")
    choice = agent.choose_format()
    assert agent.state.stalls.sampling  # choosing changes nothing; asking for it does
    agent.ask_for(choice)
    assert agent.format.name == choice.name != "udiff" and agent.state.stalls.sampling is not greedy_again
