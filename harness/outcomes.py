"""What became of one reply: one enum, and every "does this count as ..." question answered by its properties.

The stall policy (stalls.py), the format plan (format_choice.py), the candidates' choice (candidates.py),
the trace (a StepReport's `outcome`, written as the value) and the evals' reply-outcomes table
(evals/reply_outcomes.py) all read these properties; none keeps its own list of outcome names.
"""

from __future__ import annotations

from enum import StrEnum


class Outcome(StrEnum):
    # the edits were written and the tests ran
    TESTS_PASS = "tests pass"
    TESTS_FAIL = "tests fail"
    TESTS_WORSE = "tests worse"  # ... and came out worse, so the edits were undone (regressions.py)
    DRY_RUN = "dry run"  # the edits applied to a preview; nothing was written
    # the reply was read, its edits refused or not applicable (nothing was written)
    CUT_OFF = "cut off"
    EXAMPLE_COPIED = "example copied"
    PARSE_FAILED = "parse failed"
    APPLY_FAILED = "apply failed"
    NO_OP_EDIT = "no-op edit"
    EMPTY_FILE = "empty file"
    PARTIAL_FILE = "partial file"
    SYNTAX_ERROR = "syntax error"
    STUBBED_OUT = "stubbed out"
    TEST_EDIT_REFUSED = "test edit refused"
    # a reply without edits
    NO_EDITS = "no edits"
    LOOKED_UP = "looked up"  # it asked to VIEW or GREP, and was answered
    # nothing new: not tried at all
    STOPPED_EARLY = "stopped early"  # cut as it streamed at a SEARCH line the file lacks (early_stop.py)
    REPEATED_REPLY = "repeated reply"
    REPEATED_EDIT = "repeated edit"  # edits giving code whose tests have run already (tried_code.py)
    NOT_TRIED = "not tried"  # a candidate after one that passed

    @property
    def action(self) -> str:
        """The step's action in the report: edit, view (lookups answered) or none."""
        return {Outcome.LOOKED_UP: "view", Outcome.REPEATED_REPLY: "none", Outcome.NO_EDITS: "none"}.get(
            self, "edit")

    @property
    def stalls(self) -> bool:
        """A well-formed reply that made no progress: counts towards a run of stalls (stalls.py)."""
        return self in _STALLS

    @property
    def progressed(self) -> bool:
        """The code changed and the tests ran on it: ends a run of stalls."""
        return self in (Outcome.TESTS_PASS, Outcome.TESTS_FAIL)

    @property
    def applied(self) -> bool | None:
        """For the reply's edit format: its edits applied (True), did not (False), or the outcome says
        nothing about the format (None: a refused test edit, a lookup, a repeat, ...). The format plan's
        p(apply) and the evals' reply-outcomes table both count this."""
        return _APPLIED.get(self)

    @property
    def repeats(self) -> bool:
        """Says nothing new: a repeated reply, or edits giving code already tried. A step's candidates that
        all repeat (and none passes) are asked for again, hotter."""
        return self in (Outcome.REPEATED_REPLY, Outcome.REPEATED_EDIT)

    @property
    def tried(self) -> bool:
        """The reply went through the pipeline (not a repeat, not left untried behind a passing one): a
        candidate that was not ranks last."""
        return not self.repeats and self is not Outcome.NOT_TRIED


_STALLS = frozenset({Outcome.REPEATED_REPLY, Outcome.REPEATED_EDIT, Outcome.NO_OP_EDIT,
                     Outcome.EXAMPLE_COPIED, Outcome.EMPTY_FILE, Outcome.TESTS_WORSE})
# an edit that breaks the syntax was not usable. A stubbed-out function, a partial file and a refused test
# edit count neither way, as the format plan has always counted them (the reply-outcomes table that measured
# MEASURED_PRIORS counted them as not applied: 3-4% of that table's replies)
_APPLIED = {Outcome.TESTS_PASS: True, Outcome.TESTS_FAIL: True, Outcome.TESTS_WORSE: True,
            Outcome.DRY_RUN: True, Outcome.APPLY_FAILED: False, Outcome.PARSE_FAILED: False,
            Outcome.NO_EDITS: False, Outcome.NO_OP_EDIT: False, Outcome.EXAMPLE_COPIED: False,
            Outcome.EMPTY_FILE: False, Outcome.CUT_OFF: False, Outcome.SYNTAX_ERROR: False,
            Outcome.STOPPED_EARLY: False}
