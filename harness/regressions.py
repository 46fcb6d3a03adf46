"""An edit that leaves the tests worse than before it is undone.

A small model's wrong fix often breaks more than it mends (a rewritten comparison that fails every
conversion, an import it removed). Kept, it becomes the code the next step has to fix, on top of the
original bug; undone, the next step starts from the code as it was and the feedback still shows what the
edit did. Worse means fewer tests passing, or as many passing and more failing: a broken import passes
nothing, so it counts as worse even when pytest reports a single collection error.
"""

from __future__ import annotations


def standing(result) -> tuple[int, int]:
    """(passing, failing + erroring) of a test run (tools.tests.TestResult or accounting.TestOutcome)."""
    return result.passed, result.failed + result.errors


def regressed(after, before) -> bool:
    """Whether the run `after` an edit is worse than the run `before` it."""
    passed_after, failing_after = standing(after)
    passed_before, failing_before = standing(before)
    return passed_after < passed_before or (passed_after == passed_before and failing_after > failing_before)
