"""The model-facing feedback texts (shared by the agent and the replay eval)."""

from deltaserve.harness import feedback
from deltaserve.tools.tests import TestResult


def test_applied_and_dry_run_name_the_files_and_show_the_diff():
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    expected = f"Applied to x.py, y.py:\n```diff\n{diff.rstrip()}\n```"
    assert feedback.applied_edits(["x.py", "y.py"], diff) == expected
    assert feedback.applied_edits(["x.py"], diff, dry_run=True).startswith("Dry run, not written to x.py:\n")


def test_failures_say_nothing_was_changed_and_why():
    assert feedback.unapplied_edits("hunk 1 not found") == (
        "Your edits could not be applied; nothing was changed.\nhunk 1 not found")
    assert feedback.unreadable_edits(ValueError("no ======= line")).endswith("changed.\nno ======= line")
    assert feedback.no_edits("Edit format: X.") == "I found no edits in your reply. Edit format: X."


def test_test_output_keeps_its_tail():
    output = "start\n" + "x" * feedback.OUTPUT_TAIL_CHARS + "\n1 failed"
    result = TestResult(exit_code=1, output=output, passed=0, failed=1, errors=0, timed_out=False,
                        duration_s=0.1)
    text = feedback.describe_tests(result, "pytest -q")
    assert text.startswith("Tests (`pytest -q`): FAIL (0 passed, 1 failed, 0 errors)\n```\n...\n")
    assert text.endswith("1 failed\n```") and "start" not in text


def test_the_test_command_is_shown_without_where_the_interpreter_lives():
    assert feedback.shown_command("/home/me/proj/.venv/bin/python3 -m pytest -q") == "python3 -m pytest -q"
    assert feedback.shown_command("/usr/bin/python3.11 -c 'import a'") == "python3.11 -c 'import a'"
    for unchanged in ("pytest -q", "/usr/local/bin/npm test", "python -m pytest 'unclosed"):
        assert feedback.shown_command(unchanged) == unchanged
