"""What the tools tell the model after each reply. The agent sends these, and the evals that replay an
agent's transcript send the very same text, so a replayed prompt is the prompt the agent would have sent."""

from __future__ import annotations

import os
import re
import shlex

from deltaserve.tools.test_output import without_durations

OUTPUT_TAIL_CHARS = 3000


def tail(text: str, limit: int = OUTPUT_TAIL_CHARS) -> str:
    """The end of a long output (where pytest puts its summary)."""
    text = text.strip()
    return text if len(text) <= limit else "...\n" + text[-limit:]


def shown_command(cmd: str) -> str:
    """The test command as the model sees it: an interpreter given by absolute path is shown by its name
    (`/home/me/.venv/bin/python3 -m pytest` -> `python3 -m pytest`), so that a prompt does not depend on
    where the checkout lives: the same task gives the same prompt (and prefix) in every checkout."""
    try:
        parts = shlex.split(cmd)
    except ValueError:
        return cmd
    if parts and os.path.isabs(parts[0]) and re.fullmatch(r"python[\d.]*", os.path.basename(parts[0])):
        return shlex.join([os.path.basename(parts[0]), *parts[1:]])
    return cmd


def describe_tests(result, cmd: str, tail_chars: int = OUTPUT_TAIL_CHARS) -> str:
    """A tools.tests.TestResult: verdict, counts and the output's last `tail_chars`."""
    verdict = ("PASS" if result.ok else "TIMED OUT" if result.timed_out
               else "STOPPED (too much output)" if result.output_limit_exceeded else "FAIL")
    counts = f"{result.passed} passed, {result.failed} failed, {result.errors} errors"
    shown = shown_command(cmd)
    output = without_durations(result.output)
    return f"Tests (`{shown}`): {verdict} ({counts})\n```\n{tail(output, tail_chars)}\n```"


def moved_edits(moved) -> str:
    """Edits that named a missing file and were applied to the file their code belongs to
    (harness/path_repair.py)."""
    said = "; ".join(f"{m.named} does not exist, so the edit went to {m.applied_to}" if m.missing else
                     f"{m.named} does not hold the SEARCH text, {m.applied_to} does, so the edit went there"
                     for m in moved)
    return f"Your edits named the wrong file: {said}. Name the file you fix by its real path."


def rebased_blocks(rebased) -> str:
    """SEARCH blocks that quoted lines as they were before the run's earlier edits (stale_edits.py)."""
    said = "; ".join(f"{r.path} lines {r.start}-{r.end}" for r in rebased)
    return (f"Your SEARCH text quoted lines as they were before your earlier edit, so it replaced those "
            f"lines as they are now: {said}. Copy SEARCH text from the file as it is now (VIEW it).")


def unreadable_edits(error: object) -> str:
    return f"Your edits could not be read; nothing was changed.\n{error}"


def unapplied_edits(error: object, quoted_tests: list[str] = ()) -> str:
    told = f"Your edits could not be applied; nothing was changed.\n{error}"
    if quoted_tests:
        told += (f"\nYour SEARCH text is from {', '.join(quoted_tests)}, the tests, which are right. Search "
                 "for lines of the code they call and change those.")
    return told


def no_edits(format_instructions: str) -> str:
    return "I found no edits in your reply. " + format_instructions


def applied_edits(files_changed: list[str], diff: str, dry_run: bool = False) -> str:
    where = "Dry run, not written to" if dry_run else "Applied to"
    return f"{where} {', '.join(files_changed)}:\n```diff\n{diff.rstrip()}\n```"


def lookup_answers(answers: list[str]) -> str:
    return "\n\n".join(answers)


def no_op_edits(files: list[str]) -> str:
    return (f"Your edits leave {', '.join(files)} exactly as they were (the new text is identical to the "
            "old), so nothing was changed. Change the lines that cause the failure.")


def layout_only_edits(files: list[str]) -> str:
    return (f"Your edits change only blank lines or spacing in {', '.join(files)}: the code is the same, so "
            "the tests would fail the same way; nothing was changed. Change the lines that compute the wrong "
            "result.")


def test_edits_refused(files: list[str]) -> str:
    return (f"Your edits change test files ({', '.join(files)}); nothing was changed. The tests describe "
            "the correct behaviour: fix the code they test instead.")


def cut_off(max_tokens: int) -> str:
    return (f"Your reply was cut off at the {max_tokens}-token limit inside a code block, so its last edit "
            "is incomplete; nothing was changed. Write a shorter edit: only the code that changes.")


def cut_definitions(max_tokens: int, left_out: str) -> str:
    return (f"Your reply was cut off at the {max_tokens}-token limit inside {left_out}: the complete "
            f"definitions before it were used as whole functions, {left_out} was not. Write only the "
            "functions that change.")


def repeated_reply(step: int) -> str:
    return (f"This reply is identical to your reply at step {step}, which did not fix the failure; it was "
            "not applied again. Look at the test output once more and try a different change.")


def example_copied(files: list[str]) -> str:
    return (f"Your edits create {', '.join(files)}: the example path of the instructions, not a file of "
            "this repository; nothing was changed. Write the real path of the file you fix (as it is shown "
            "above) and its new code.")


def placeholders_copied(lines: list[str]) -> str:
    return (f"Your reply repeats the placeholder {' and '.join(lines)} of the instructions' example; it "
            "stands for real code, so nothing was changed. Write the actual lines of the file (as shown "
            "above) and their corrected version.")


def partial_files(files: list[str]) -> str:
    return (f"Your edits would drop the lines of {', '.join(files)} that were not shown to you (marked "
            "\"⋮ lines ... not shown\"); nothing was changed. Write only the functions or lines you change, "
            "never a fold marker, or VIEW the folded lines first.")


def empty_files(files: list[str]) -> str:
    return (f"Your edits leave {', '.join(files)} empty (its code fence holds nothing; was the code written "
            "outside the fence?); nothing was changed. Write the path alone on one line, then a line with "
            "```python, the code, and a line with ``` after it.")


def stubbed_out(path: str, names: list[str]) -> str:
    quoted = ", ".join(f"`{n}`" for n in names)
    return (f"Your edits would replace the code of {quoted} in {path} with a placeholder (`pass`, `...` or "
            "`raise NotImplementedError`), deleting what it does; nothing was changed. Write the functions "
            "you change in full, and leave out the ones you do not change.")


def syntax_error(path: str, error: SyntaxError, language: str = "Python") -> str:
    """Where the edited file stops parsing, with the offending line, so the next reply can fix that line."""
    where = f"line {error.lineno}" if error.lineno else "the end"
    line = (error.text or "").rstrip()
    shown = f":\n```{language.lower()}\n{line}\n```" if line.strip() else "."
    advice = ("complete statements, the same indentation as the code around it" if language == "Python"
              else "every bracket, quote and separator in place")
    return (f"Your edits would leave {path} with a {language} syntax error at {where} ({error.msg}){shown}\n"
            f"Nothing was changed. Write the edit again as valid {language}: {advice}.")


def worse_edits_undone(before, after) -> str:
    """After the test output of an edit that made the tests worse (harness/regressions.py)."""
    return (f"Your edit made the tests worse: before it {before.passed} passed and "
            f"{before.failed + before.errors} failed, after it {after.passed} passed and "
            f"{after.failed + after.errors} failed. It has been undone; the files are as they were before "
            "it. Find the cause of the original failure and try a different change.")


def repeated_edit(step: int) -> str:
    """Edits giving code whose tests have run already (harness/tried_code.py)."""
    when = "the code as it was at the start" if step == 0 else f"the code your edit at step {step} gave"
    return (f"Your edits give exactly {when}, whose tests have run already and failed; nothing was "
            "changed. Look at the failure once more and make a different change.")
