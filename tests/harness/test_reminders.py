"""Every prompt ends with the reply's shape for the file in play, in the step's format."""

from __future__ import annotations

import pytest

from deltaserve.harness.formats.reminders import SHAPES, reminder

from .test_small_model_replies import run


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_the_first_prompt_ends_with_the_reply_shape_for_the_code_under_test(project, quick_test_cmd, fmt):
    agent, _, _ = run(project, quick_test_cmd, ["no edits here"], edit_format=fmt, max_steps=1)
    last = agent.prompts[0][-1]["content"].rstrip()
    assert last.endswith(reminder(fmt, "calc.py")) and "calc.py" in last.splitlines()[-1]


def test_symbol_falls_back_for_other_languages_and_unknown_formats_have_no_reminder():
    assert reminder("whole", "a.py").startswith("Reply with a.py alone on one line")
    assert "SEARCH" in reminder("symbol", "main.go") and reminder("symbol", None) == ""
    assert reminder("my-own-format", "a.py") == ""


def test_a_file_shown_in_part_is_still_the_one_the_reminder_names(project, quick_test_cmd):
    """A long file is shown around its relevant lines only; the closing line must still name it, or a
    small model writes the instructions' placeholder path."""
    calc = project / "calc.py"
    helpers = "".join(f"\n\ndef helper_{i}(x):\n    return x + {i}\n" for i in range(80))
    calc.write_text(calc.read_text() + helpers)
    agent, _, _ = run(project, quick_test_cmd, ["no edits here"], edit_format="search_replace", max_steps=1,
                      max_file_chars=400)
    assert "calc.py" not in agent.state.seen and "calc.py" in agent.state.shown  # calc.py was cut
    assert agent.prompts[0][-1]["content"].rstrip().endswith(reminder("search_replace", "calc.py"))
