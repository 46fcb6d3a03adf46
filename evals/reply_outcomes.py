"""How often a model's replies in each edit format change the code: counted from agent-run traces.

An agent eval writes one trace per task (`<out>/runs/*.trace.jsonl`, a JSON object per step). Every reply
counts, each parallel candidate included, whose outcome says whether its format's edits applied
(harness/outcomes.py, `Outcome.applied`, which the format plan counts too): a repeated reply, a lookup or a
refused test edit says nothing about the format and is left out. A reply *applied* when its edits were
written and the tests ran ("tests pass" / "tests fail" / "tests worse", then undone). These rates are what
`--format auto` needs as its prior (harness/format_choice.py MEASURED_PRIORS): measured with each format
forced, over a whole suite.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from deltaserve.harness.accounting import RunReport, StepReport
from deltaserve.harness.outcomes import Outcome

APPLIED = frozenset(o for o in Outcome if o.applied)


@dataclass
class FormatOutcomes:
    model: str
    edit_format: str
    decoding: str = ""  # how the replies were decoded (StepReport.decoding): constrained, early stop, plain
    outcomes: Counter = field(default_factory=Counter)
    repeats: int = 0  # replies repeating an earlier one (left out of `outcomes`: they say nothing new)

    @property
    def replies(self) -> int:
        return sum(self.outcomes.values())

    @property
    def applied(self) -> int:
        return sum(self.outcomes[o] for o in APPLIED)

    @property
    def apply_rate(self) -> float | None:
        return self.applied / self.replies if self.replies else None


def _step_outcomes(step: StepReport) -> list[Outcome]:
    """The outcomes of a step's replies that say something about its format: its candidates' where it had
    several, else its own."""
    outcomes = [c.outcome for c in step.candidates] if step.candidates else [step.outcome]
    return [o for o in outcomes if o and o.applied is not None]


def read_traces(paths: list[Path]) -> list[StepReport]:
    """The steps of the trace files, in order."""
    return [step for path in paths for step in RunReport.from_trace(path).steps]


def traces_next_to(results: Path) -> list[Path]:
    """The trace files an agent eval wrote beside `results`."""
    return sorted((Path(results).parent / "runs").glob("*.trace.jsonl"))


def format_outcomes(steps: list[StepReport]) -> list[FormatOutcomes]:
    """Per model x edit format x decoding, the outcomes of its replies (those saying nothing about it left
    out) and how many repeated an earlier reply."""
    groups: dict[tuple[str, str, str], FormatOutcomes] = {}
    for step in steps:
        if not step.edit_format:
            continue
        key = (step.model, step.edit_format, step.decoding)
        group = groups.setdefault(key, FormatOutcomes(*key))
        group.outcomes.update(_step_outcomes(step))
        outcomes = [c.outcome for c in step.candidates] if step.candidates else [step.outcome]
        group.repeats += sum(1 for o in outcomes if o and o.repeats)
    return [groups[k] for k in sorted(groups) if groups[k].replies]
