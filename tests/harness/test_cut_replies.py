"""Replies cut off at the token limit inside a code block: whole-definition formats keep the definitions
the model finished and apply them as whole functions, a file is never written short, and a cut candidate
is read as the agent would read it (each reply's own finish_reason). Real files, real test commands; only
the replies are scripted."""

from __future__ import annotations

from deltaserve.harness import Agent, formats
from deltaserve.harness.cut_replies import complete_definitions, cut_reply
from deltaserve.harness.formats.auto import AskedFormat
from deltaserve.tools.workspace import Workspace

from .test_candidates import MODEL, scripted, try_alone

FIXED_ADD = "def add(a, b):\n    return a + b\n"
# the whole file re-typed with add() fixed, cut inside mul()'s body: a short file if written as it is
CUT = f"calc.py\n```python\n{FIXED_ADD}\n\ndef mul(a, b):\n    return a"


def kept_code(reply: str, project) -> str:
    kept = complete_definitions(reply, Workspace(project))
    (edit,) = kept.reader.parse(kept.text)
    return edit.code


def test_the_definitions_before_the_cut_are_kept_and_the_cut_one_named(project):
    kept = complete_definitions(CUT, Workspace(project))
    assert kept.left_out == "`mul`" and kept_code(CUT, project) == FIXED_ADD
    # a decorator, even over several lines and with a comment under it, goes with its definition
    decorated = f"calc.py\n```python\n{FIXED_ADD}\n\n@functools.lru_cache(\n    maxsize=8)\n# why\ndef mul("
    assert kept_code(decorated, project) == FIXED_ADD
    # a cut in module-level code after the last definition keeps that definition
    trailing = f"calc.py\n```python\n{FIXED_ADD}\n\nif __name__ == '__main__':\n    print(add("
    assert kept_code(trailing, project) == FIXED_ADD
    assert complete_definitions(trailing, Workspace(project)).left_out == "the code after `add`"


def test_nothing_is_kept_when_no_definition_was_finished_or_the_file_is_new_or_not_python(project):
    ws = Workspace(project)
    assert complete_definitions("calc.py\n```python\ndef add(a, b):\n    return a", ws) is None
    assert complete_definitions("calc.py\n```python\nimport os\n\ndef add(a, b):\n", ws) is None
    assert complete_definitions(CUT.replace("calc.py", "new_module.py"), ws) is None  # would be written short
    (project / "calc.js").write_text("")
    assert complete_definitions(CUT.replace("calc.py", "calc.js"), ws) is None
    assert complete_definitions(CUT.replace("calc.py", "../outside.py"), ws) is None  # a refused path


def test_only_formats_that_read_definitions_keep_part_of_a_cut_reply(project):
    ws = Workspace(project)
    assert cut_reply(CUT, "stop", formats.get("whole"), ws) is None  # not cut: read as usual
    assert cut_reply(CUT, "length", formats.get("whole"), ws).text is None  # the file would be written short
    assert cut_reply(CUT, "length", formats.get("symbol"), ws).left_out == "`mul`"
    assert cut_reply(CUT + "\n```\n", "length", formats.get("whole"), ws) is None  # closed at the limit


def test_a_python_block_the_budget_closed_mid_definition_is_read_as_cut(project):
    # our engine's symbol constraint closes the fence at the budget; inside a docstring nothing parsed there
    closed = f'{CUT}\n    """Multiply a and b.\n```'
    ws = Workspace(project)
    assert cut_reply(closed, "stop", formats.get("symbol"), ws) is None  # the model closed it: read as usual
    kept = cut_reply(closed, "length", formats.get("symbol"), ws)
    assert kept.left_out == "`mul`" and [e.code for e in kept.reader.parse(kept.text)] == [FIXED_ADD]
    # a closed block that parses, or SEARCH/REPLACE text (not Python), is whole
    assert cut_reply(f"{CUT}\n```", "length", formats.get("symbol"), ws) is None
    blocks = "calc.py\n```\n<<<<<<< SEARCH\n    return a\n=======\n    return b\n>>>>>>> REPLACE\n```"
    assert cut_reply(blocks, "length", formats.get("search_replace"), ws) is None


def test_under_auto_a_cut_whole_file_step_never_writes_the_file_short(project):
    """A step that asked for the whole file, answered with every definition and cut in the module code
    after them: read as a whole file, the kept part would drop that code; it is read as functions."""
    (project / "calc.py").write_text((project / "calc.py").read_text() + "\nif __name__ == '__main__':\n"
                                     "    print(add(1, 2))\n")
    reply = f"calc.py\n```python\n{FIXED_ADD}\n\ndef mul(a, b):\n    return a * b\n\nif __name__ =="
    ws = Workspace(project)
    cut = cut_reply(reply, "length", AskedFormat(formats.get("whole")), ws)
    new = cut.reader.apply(cut.reader.parse(cut.text), ws, dry_run=True).new_contents["calc.py"]
    assert "a + b" in new and "print(add(1, 2))" in new


def test_the_agent_applies_the_finished_definitions_and_says_what_was_left_out(project, quick_test_cmd):
    wrong = CUT.replace("a + b", "a * b")
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", max_steps=2,
                  complete=scripted([(wrong, "length"), (CUT, "length")], calls))
    first, second = agent.run().steps
    assert first.outcome == "tests fail"  # add() as the cut reply wrote it: applied, then tested
    assert "inside `mul`: the complete definitions before it were used" in agent.prompts[1][-1]["content"]
    assert second.outcome == "tests pass"
    text = (project / "calc.py").read_text()
    assert "a + b" in text and "def mul(a, b):\n    return a * b" in text  # mul() as it was, not cut short


def test_a_cut_candidate_is_read_with_its_own_finish_reason(project, quick_test_cmd):
    """Two candidates of one request: the first cut in the whole format (nothing written, tried or kept),
    the second complete and passing."""
    whole_fixed = f"calc.py\n```python\n{FIXED_ADD}\n\ndef mul(a, b):\n    return a * b\n```\n"
    assert try_alone(formats.get("whole"), CUT, project, quick_test_cmd,
                     finish_reason="length").outcome == "cut off"
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="whole", candidates=2, max_steps=1,
                  complete=scripted([(CUT, "length"), (whole_fixed, "stop")], calls))
    (step,) = agent.run().steps
    assert [c.outcome for c in step.candidates] == ["cut off", "tests pass"]
    assert step.outcome == "tests pass" and "a * b" in (project / "calc.py").read_text()
