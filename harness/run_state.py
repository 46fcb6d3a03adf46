"""What one agent run learns as it goes, in one object: the agent's only mutable state besides its observers.

The pipeline reads it (Agent.context turns it into a trial.Context); the agent changes it only where it
says so: `record` (what a trial did), `use_format` (the format `auto` chose for the next step), and the
stall policy's and format plan's own `record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltaserve.harness.format_choice import FormatPlan
from deltaserve.harness.stalls import StallPolicy
from deltaserve.harness.trial import Trial
from deltaserve.harness.tried_code import START, CodeState
from deltaserve.harness.workspace_guard import Snapshot
from deltaserve.tools.localize import Localization
from deltaserve.tools.tests import TestResult


@dataclass(frozen=True)
class FormatChoice:
    """The format of the next step and how to ask for it (Agent.choose_format)."""

    name: str
    reason: str | None = None  # `auto`: the expected costs compared
    described: bool = True  # the prompt has described it already
    greedy_again: bool = False  # a format not asked for yet after stalls: a new question, so greedy again


@dataclass
class RunState:
    format: object  # the current step's EditFormat
    snapshot: Snapshot  # each written file's text before the run first wrote it (the final diff)
    stalls: StallPolicy  # replies that changed nothing: sample, then hotter and (auto) in another format
    plan: FormatPlan | None = None  # `auto`: the per-step choice of format
    reason: str | None = None  # why `auto` chose the current step's format
    described: list[str] = field(default_factory=list)  # `auto`: the formats the prompt has described
    seen: list[str] = field(default_factory=list)  # files whose full text the model has seen
    shown: list[str] = field(default_factory=list)  # files the prompt shows, in full or in part
    replies: list[str] = field(default_factory=list)  # every reply so far, stripped
    localization: Localization | None = None  # step 0's coverage run, when there was one
    baseline: TestResult | None = None  # the tests of the code as it stands (an undone edit's are not)
    tried: dict[CodeState, int] = field(default_factory=lambda: {START: 0})  # code whose tests ran -> step
    prompts: list[list[dict]] = field(default_factory=list)  # every prompt sent, for inspection and tests

    def see(self, paths) -> None:
        self.seen.extend(p for p in dict.fromkeys(paths) if p not in self.seen)

    def record(self, step: int, reply: str, trial: Trial) -> None:
        """What the step's kept reply did: the reply said, the files shown or written now seen, the code
        written tried, and its tests the baseline unless the edit was undone."""
        self.replies.append(reply.strip())
        self.see(trial.viewed)
        if trial.result is not None:
            self.see(trial.result.files_changed)
        if trial.state is not None:
            self.tried[trial.state] = step
        if trial.tests is not None and not trial.undone:
            self.baseline = trial.tests

    def use_format(self, choice: FormatChoice, fmt) -> None:
        """The next step asks for `fmt` (`choice.name`)."""
        self.format, self.reason = fmt, choice.reason
        if choice.greedy_again:
            self.stalls.switched_format()
        if not choice.described:
            self.described.append(choice.name)
