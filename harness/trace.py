"""JSONL trace: one StepReport per line, flushed as each step ends (RunReport.from_trace reads it back)."""

from __future__ import annotations

from pathlib import Path

from deltaserve.harness.accounting import StepReport
from deltaserve.harness.events import AgentObserver, StepDetails


class TraceWriter(AgentObserver):
    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")  # one run per file

    def write(self, step: StepReport) -> None:
        if self.path:
            with self.path.open("a") as f:
                f.write(step.model_dump_json() + "\n")

    def on_step(self, step: StepReport, details: StepDetails) -> None:
        self.write(step)
