"""One outcome type: every "does this count as ..." question is a property of the enum, answered once."""

from __future__ import annotations

from deltaserve.evals.reply_outcomes import format_outcomes
from deltaserve.harness.accounting import StepReport
from deltaserve.harness.candidates import CandidateOutcome
from deltaserve.harness.outcomes import Outcome


def test_the_properties_classify_every_outcome_as_the_stall_policy_and_the_format_plan_did():
    assert {o.value for o in Outcome if o.stalls} == {"repeated reply", "repeated edit", "no-op edit",
                                                      "example copied", "empty file", "tests worse"}
    assert {o.value for o in Outcome if o.progressed} == {"tests pass", "tests fail"}
    assert {o.value for o in Outcome if o.applied} == {"tests pass", "tests fail", "tests worse", "dry run"}
    assert {o.value for o in Outcome if o.applied is None} == {
        "partial file", "stubbed out", "test edit refused", "looked up", "repeated reply", "repeated edit",
        "not tried"}
    assert {o.value for o in Outcome if not o.tried} == {"repeated reply", "repeated edit", "not tried"}
    assert {o.action for o in Outcome} == {"edit", "view", "none"}


def test_a_trace_line_reads_back_as_the_enum_and_is_written_as_its_phrase():
    step = StepReport.model_validate_json('{"step": 1, "action": "edit", "outcome": "no-op edit", '
                                          '"prompt_tokens": 1, "cached_tokens": 0, "completion_tokens": 1}')
    assert step.outcome is Outcome.NO_OP_EDIT and '"outcome":"no-op edit"' in step.model_dump_json()


def test_the_reply_outcomes_table_counts_what_the_format_plan_counts():
    """A refused test edit or a lookup says nothing about the format, for the table as for `auto`."""
    def step(outcome, **more):
        return StepReport(step=1, action=Outcome(outcome).action, outcome=outcome, edit_format="whole",
                          prompt_tokens=1, cached_tokens=0, completion_tokens=1, **more)

    candidates = [CandidateOutcome(index=0, outcome="tests fail"),
                  CandidateOutcome(index=1, outcome="repeated reply")]
    steps = [step("tests pass"), step("apply failed"), step("test edit refused"), step("looked up"),
             step("repeated reply"), step("tests fail", candidates=candidates)]
    (group,) = format_outcomes(steps)
    assert (group.replies, group.applied) == (3, 2)
