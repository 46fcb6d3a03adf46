"""Replies in the shapes small models write (tests/harness/replies/): loose markers and paths are read,
and no-op edits, test edits, edits that break the syntax and repeated replies are refused with feedback
that says why, before anything is written. The agent runs on a real project with its real tests; only
the replies are scripted."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import litellm
import pytest

from deltaserve.harness import Agent, formats
from deltaserve.harness.agent import RESAMPLE_SEED
from deltaserve.harness.client import complete
from deltaserve.tools.workspace import Workspace

REPLIES = Path(__file__).parent / "replies"
MODEL = "openai/gpt-4o-mini"  # counted with litellm's bundled tokenizer; never called
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"  # conftest's calc.py
FIXED = BUGGY.replace("a - b", "a + b")


def reply(name: str) -> str:
    return (REPLIES / name).read_text()


@pytest.mark.parametrize(("fmt", "sample"), [
    ("search_replace", "sr_bare_markers.txt"),
    ("search_replace", "sr_path_inside_fence.txt"),
    ("search_replace", "sr_path_as_search_marker.txt"),
    ("symbol", "sr_path_as_search_marker.txt"),
    ("whole", "whole_path_as_comment.txt"),
    ("whole", "whole_path_in_info.txt"),
    ("symbol", "symbol_function.txt"),
    ("symbol", "symbol_path_in_its_own_fence.txt"),
    ("symbol", "symbol_diff_marks.txt"),
])
def test_loosely_written_edits_are_read_and_apply(project, fmt, sample):
    edits = formats.get(fmt).parse(reply(sample))
    result = formats.get(fmt).apply(edits, Workspace(project), dry_run=True)
    assert result.new_contents == {"calc.py": FIXED}


def scripted(replies: list[str], calls: list[dict]):
    def call(**kwargs):
        calls.append(kwargs)
        text = replies[min(len(calls), len(replies)) - 1]
        prompt = litellm.token_counter(model=MODEL, messages=kwargs["messages"])
        usage = {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}
        mock = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": usage}
        return complete(**{k: v for k, v in kwargs.items() if k != "seed"}, mock_response=mock)

    return call


def run(project, test_cmd, replies, **settings):
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=test_cmd, model=MODEL,
                  complete=scripted(replies, calls), **settings)
    return agent, agent.run(), calls


@pytest.mark.parametrize(("sample", "outcome", "said"), [
    ("sr_no_op.txt", "no-op edit", "exactly as they were"),
    # a 1.5B model's reply that re-types the function with a blank line before it: the same code
    ("sr_blank_line_only.txt", "no-op edit", "only blank lines or spacing in calc.py"),
    ("sr_edits_the_test.txt", "test edit refused", "test files (test_calc.py)"),
    # a 1.5B model's edit that breaks the file: refused with the line that no longer parses
    ("sr_syntax_error.txt", "syntax error",
     "syntax error at line 2 (invalid syntax):\n```python\n    value = return"),
])
def test_refused_edits_write_nothing_and_say_why(project, quick_test_cmd, sample, outcome, said):
    tests_before = (project / "test_calc.py").read_text()
    agent, report, _ = run(project, quick_test_cmd, [reply(sample), reply("sr_bare_markers.txt")],
                           edit_format="search_replace", max_steps=2)
    assert report.steps[0].outcome == outcome and not report.steps[0].apply.ok
    assert said in agent.prompts[1][-1]["content"]  # the feedback the model got
    assert (project / "test_calc.py").read_text() == tests_before
    assert report.steps[1].outcome == "tests pass"


def test_an_edit_that_stubs_out_working_code_writes_nothing_and_says_which(project, quick_test_cmd):
    # a 1.5B model's symbol reply shape: the function it fixes, and a neighbour's code replaced by `pass`
    agent, report, _ = run(project, quick_test_cmd, [reply("symbol_stubs_a_neighbour.txt"),
                                                     reply("symbol_function.txt")],
                           edit_format="symbol", max_steps=2)
    assert report.steps[0].outcome == "stubbed out" and not report.steps[0].apply.ok
    told = agent.prompts[1][-1]["content"]
    assert "`mul` in calc.py with a placeholder" in told and "`add`" not in told
    assert report.steps[1].outcome == "tests pass"
    assert (project / "calc.py").read_text() == FIXED


def test_only_working_code_replaced_by_a_placeholder_counts_as_stubbed():
    from deltaserve.harness.edit_checks import stubbed_functions

    old = ("class Box:\n    def get(self):\n        return self.v\n\n    def todo(self):\n        pass\n\n\n"
           "def size(b):\n    return 1\n")
    stub = old.replace("return self.v", '"""The value."""\n        ...').replace(
        "return 1", "raise NotImplementedError('later')")
    assert stubbed_functions("box.py", old, stub) == ["Box.get", "size"]
    assert stubbed_functions("box.py", old, old.replace("return 1", "return 2")) == []
    assert stubbed_functions("box.py", stub, stub) == []  # placeholders before: not the edit's doing
    assert stubbed_functions("box.pyi", old, stub) == []  # interface stubs are all placeholders
    assert stubbed_functions("box.py", None, stub) == []  # a new file
    assert stubbed_functions("box.py", old, "def size(b:\n") == []  # unparseable: the syntax check's case


def test_only_layout_changes_count_as_layout_only():
    from deltaserve.harness.edit_checks import layout_only

    old = "def f(x):\n    # the sum\n    return g(x, 1)\n"
    assert layout_only("m.py", old, "\n\ndef f(x):\n    # the sum\n    return g(\n        x, 1)\n")
    assert not layout_only("m.py", old, old.replace("1)", "2)"))
    assert not layout_only("m.py", old, old.replace("# the sum", "# noqa"))  # comments can be directives
    assert not layout_only("m.py", old, old.replace("    #", '    """Doc."""\n    #'))  # a docstring is code
    assert not layout_only("m.txt", "a\n", "a\n\n")  # other files: any change counts
    assert not layout_only("m.py", None, old) and not layout_only("m.py", old, None)
    assert not layout_only("m.py", old, "def f(x:\n")  # unparseable: the syntax check's case


def test_test_edits_apply_when_allowed(project, quick_test_cmd):
    _, report, _ = run(project, quick_test_cmd, [reply("sr_edits_the_test.txt")],
                       edit_format="search_replace", max_steps=1, allow_test_edits=True)
    assert report.steps[0].apply.ok and "-1" in (project / "test_calc.py").read_text()


WRONG = reply("sr_bare_markers.txt").replace("a + b", "a // b")
RIGHT = reply("sr_bare_markers.txt").replace("a - b", "a // b")


def test_a_repeated_reply_is_asked_for_again_within_its_step_sampled(project, quick_test_cmd):
    agent, report, calls = run(project, quick_test_cmd, [WRONG, WRONG, RIGHT],
                               edit_format="search_replace", max_steps=3)
    assert [s.outcome for s in report.steps] == ["tests fail", "tests pass"]
    first, second = report.steps
    assert second.resampled and not first.resampled and second.reply == RIGHT
    assert second.completion_tokens == 2 * first.completion_tokens  # both calls of step 2 are counted
    assert calls[0]["temperature"] == 0.0 and calls[1]["temperature"] == 0.0
    assert calls[2]["temperature"] > 0 and calls[2]["seed"] == RESAMPLE_SEED + 2


def test_a_reply_repeated_twice_is_not_applied_again_and_the_next_call_samples(project, quick_test_cmd):
    agent, report, calls = run(project, quick_test_cmd, [WRONG, WRONG, WRONG, RIGHT],
                               edit_format="search_replace", max_steps=3)
    assert [s.outcome for s in report.steps] == ["tests fail", "repeated reply", "tests pass"]
    assert "identical to your reply at step 1" in agent.prompts[2][-1]["content"]
    assert calls[3]["temperature"] > 0 and calls[3]["seed"] == 3


@pytest.mark.parametrize(("written", "outcome", "said"), [
    # the whole format's example, its placeholder line left out
    ("path/to/file.py\n```\n```\n", "example copied", "example path of the instructions"),
    ("path/to/file.py\n```\ndef add(a, b):\n    return a + b\n```\n", "example copied", "example path"),
    ("helpers.py\n```\n\n```\n", "empty file", "helpers.py empty"),  # a new, empty file
    # the code written after an empty fence (a 1.5B model's reply): calc.py would be left empty
    ("calc.py\n```\n```\npython\ndef add(a, b):\n    return a + b\n", "empty file", "calc.py empty"),
    # the real path, the example's body (1.5B replies in symbol and udiff)
    ("calc.py\n```python\ndef name_of_the_function(its, arguments):\n"
     "    <its complete corrected body>\n```\n",
     "example copied", "placeholder <its complete corrected body>"),
    ("```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n <an unchanged line>\n-<the old line>\n"
     "+<the new line>\n```\n", "example copied", "<an unchanged line> and <the old line> and <the new line>"),
])
def test_example_copied_or_a_blank_file_writes_nothing_and_says_why(project, quick_test_cmd, written, outcome,
                                                                    said):
    agent, report, _ = run(project, quick_test_cmd, [written, reply("whole_path_as_comment.txt")],
                           edit_format="whole", max_steps=2)
    assert report.steps[0].outcome == outcome and not report.steps[0].apply.ok
    assert said in agent.prompts[1][-1]["content"]
    assert sorted(p.name for p in project.iterdir()) == ["calc.py", "test_calc.py"]
    assert report.steps[1].outcome == "tests pass"


def test_a_reply_cut_off_inside_its_code_block_writes_nothing(project, quick_test_cmd):
    """A whole file cut at the token limit would be written short: nothing is applied, the model is told."""
    cut = "calc.py\n```python\ndef add(a, b):\n    return a + b\n"  # mul() never came
    before = (project / "calc.py").read_text()
    texts = iter([(cut, "length"), (cut + "```\n", "length")])  # closed just at the limit: complete

    def call(**kwargs):
        text, finish = next(texts)
        mock = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": finish}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}
        return complete(**{k: v for k, v in kwargs.items() if k != "seed"}, mock_response=mock)

    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="whole", max_steps=2, complete=call)
    first, second = agent.run().steps
    assert first.outcome == "cut off" and not first.apply.ok
    assert "cut off at the 1024-token limit" in agent.prompts[1][-1]["content"]
    assert second.outcome == "tests pass" and (project / "calc.py").read_text() != before


def test_search_text_copied_from_the_tests_is_named_as_such(project, test_cmd):
    replies = [reply("sr_test_lines_for_the_code.txt"), reply("sr_bare_markers.txt")]
    _, report, calls = run(project, test_cmd, replies, edit_format="search_replace")
    assert [s.outcome for s in report.steps] == ["apply failed", "tests pass"]
    told = calls[1]["messages"][-1]["content"]
    assert "Your SEARCH text is from test_calc.py, the tests" in told


def test_only_a_file_that_parsed_before_must_parse_after():
    from deltaserve.harness.syntax import new_syntax_error
    broken = "def add(a, b):\n    value = return a + b\n"
    assert new_syntax_error("calc.py", BUGGY, broken).lineno == 2
    assert new_syntax_error("calc.py", None, broken) is not None  # a new file is held to it too
    # broken already: the fix may take more than one step
    assert new_syntax_error("calc.py", broken, broken + "x = (\n") is None
    assert new_syntax_error("calc.js", BUGGY, broken) is None  # no parser for this language
    assert new_syntax_error("calc.py", BUGGY, None) is None  # a deletion
    config = '{\n  "rate": 1,\n  "burst": 10\n}\n'
    error = new_syntax_error("conf/limits.json", config, config.replace('1,', '1'))
    assert (error.lineno, error.text) == (3, '  "burst": 10')
    assert new_syntax_error("tsconfig.json", "{// JSONC\n}", "{// JSONC, still\n}") is None  # never parsed
    toml = '[tool.app]\nrate = 1\n'
    if sys.version_info >= (3, 11):
        assert new_syntax_error("pyproject.toml", toml, toml.replace("= 1", "= ")).lineno == 2


def test_a_json_edit_that_breaks_the_file_is_refused_with_its_line(project, quick_test_cmd):
    (project / "limits.json").write_text('{\n  "rate": 1,\n  "burst": 10\n}\n')
    drop_comma = ('limits.json\n```\n<<<<<<< SEARCH\n  "rate": 1,\n=======\n  "rate": 2\n'
                  '>>>>>>> REPLACE\n```\n')
    agent, report, _ = run(project, quick_test_cmd, [drop_comma, reply("sr_bare_markers.txt")],
                           edit_format="search_replace", max_steps=2)
    assert report.steps[0].outcome == "syntax error"
    told = agent.prompts[1][-1]["content"]
    assert "limits.json with a JSON syntax error at line 3" in told and '```json\n  "burst": 10\n```' in told
    assert (project / "limits.json").read_text().count('"rate": 1,') == 1


def test_a_unittest_project_is_counted_and_its_failing_test_shown(project):
    """`python -m unittest` (Django's runner prints the same): counts and the failing test from its
    headers, so the prompt names it, its code is in the context, and a worse edit is told apart."""
    (project / "test_calc.py").write_text(
        "import unittest\n\nfrom calc import add, mul\n\n\nclass CalcTests(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_mul(self):\n        self.assertEqual(mul(2, 3), 6)\n")
    agent, report, _ = run(project, "python -m unittest", [reply("sr_bare_markers.txt")],
                           edit_format="search_replace", max_steps=1, localize=False)
    first = agent.prompts[0][-1]["content"]
    assert "test_calc.CalcTests.test_add" in first and "def test_add(self):" in first
    assert (report.steps[0].tests.passed, report.steps[0].outcome) == (2, "tests pass")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_javascript_project_is_fixed_with_its_own_test_runner(tmp_path):
    """`node --test`: the stack trace names calc.js (in parentheses), the TAP output is counted, a
    SEARCH/REPLACE edit fixes it."""
    root = tmp_path / "jsproj"
    root.mkdir()
    (root / "calc.js").write_text("exports.add = (a, b) => {\n  return a - b;\n};\n")
    (root / "calc.test.js").write_text(
        "const test = require('node:test');\nconst assert = require('node:assert');\n"
        "const {add} = require('./calc');\n\n"
        "test('adds', () => {\n  assert.strictEqual(add(1, 2), 3);\n});\n")
    fix = "calc.js\n```\n<<<<<<< SEARCH\n  return a - b;\n=======\n  return a + b;\n>>>>>>> REPLACE\n```\n"
    calls: list[dict] = []
    agent = Agent(root, "add() returns the wrong result", test_cmd="node --test", model=MODEL,
                  complete=scripted([fix], calls), edit_format="search_replace", max_steps=1)
    report = agent.run()
    first = agent.prompts[0][-1]["content"]
    assert "calc.js\n```" in first and "(0 passed, 1 failed, 0 errors)" in first
    assert report.steps[0].outcome == "tests pass" and report.steps[0].tests.passed == 1
