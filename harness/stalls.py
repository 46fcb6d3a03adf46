"""Steps that change nothing, and what the agent does when they pile up.

A stalled step is a reply the agent could not use to make progress although it was well formed: a reply
identical to an earlier one, edits that leave every file as it was (a function re-typed unchanged), the
instructions' example copied back, a file left blank, an edit undone because the tests came out worse
(harness/regressions.py). A small model asked the same question at
temperature 0 answers the same way, and even sampled it tends to fall back on the same reading of the code,
so the response escalates with the run of stalls in a row:

1. the first stall: sample from then on (resample_temperature, a new seed per step) instead of greedy;
2. the second stall in a row: under `--format auto`, none of the formats that stalled is chosen again until
   a step changes something, and the first reply in a format not asked for before is greedy again (a new
   format is a new question: it needs no sampling to differ, and sampling hot costs a small model its
   accuracy; a format asked for before keeps sampling, or its greedy reply would come back); with a fixed
   format, every further stall in a row samples hotter (up by ESCALATION_STEP, at most MAX_TEMPERATURE).

A step that changes something (tests run, pass or fail) ends the run of stalls; the sampling stays on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltaserve.harness.outcomes import Outcome

ESCALATION_STEP = 0.3
MAX_TEMPERATURE = 1.3


@dataclass
class StallPolicy:
    base_temperature: float
    resample_temperature: float
    in_a_row: int = 0  # stalls since the last step that changed something (or the last format switch)
    sampling: bool = False  # set by a stall: greedy decoding would write the same reply again
    stalled_formats: list[str] = field(default_factory=list)  # the formats of the current run of stalls
    avoiding: bool = False  # `auto` keeps off stalled_formats until a step changes something

    def record(self, outcome: Outcome | str, edit_format: str) -> None:
        outcome = Outcome(outcome)
        if outcome.stalls:
            self.in_a_row += 1
            self.sampling = True
            if edit_format not in self.stalled_formats:
                self.stalled_formats.append(edit_format)
            if self.in_a_row >= 2:
                self.avoiding = True
        elif outcome.progressed:
            self.in_a_row, self.stalled_formats, self.avoiding = 0, [], False

    def switched_format(self) -> None:
        """`auto` chose a format that has not stalled: its first reply is greedy again."""
        self.sampling, self.in_a_row = False, 0

    def temperature(self) -> float:
        """The next call's temperature: the configured one until a stall, then hotter with every stall."""
        if not self.sampling:
            return self.base_temperature
        hotter = self.resample_temperature + ESCALATION_STEP * max(0, self.in_a_row - 1)
        return max(self.base_temperature, min(hotter, MAX_TEMPERATURE))

    def hotter(self) -> float:
        """A temperature one escalation above what sampling uses now: for a second round of candidates
        when every candidate of the first repeated an earlier reply."""
        now = max(self.temperature(), self.resample_temperature)
        return min(now + ESCALATION_STEP, MAX_TEMPERATURE)

    def avoid(self) -> list[str]:
        """Formats `auto` should not choose next: those that stalled, once two stalls came in a row."""
        return list(self.stalled_formats) if self.avoiding else []
