"""The live terminal table: one row per step as it finishes, then a totals row."""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.table import Table

from harness.accounting import RunReport, StepReport

COLUMNS = ["step", "action", "prompt", "cached", "completion", "passes", "whole-file", "decode saved",
           "TTFT s", "decode s", "outcome"]


def _n(value) -> str:
    if value is None:
        return "unknown"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def row(r: StepReport | RunReport, label: str, action: str, outcome: str) -> list[str]:
    return [label, action, _n(r.prompt_tokens), _n(r.cached_tokens), _n(r.completion_tokens), _n(r.decode_passes),
            _n(r.whole_file_tokens), _n(r.decode_saved), _n(r.ttft_s), _n(r.decode_s), outcome]


class LiveTable:
    def __init__(self, title: str = "", console: Console | None = None):
        self.console = console or Console()
        self.table = Table(title=title)
        for name in COLUMNS:
            self.table.add_column(name, justify="left" if name in ("action", "outcome") else "right")
        self._live = Live(self.table, console=self.console, auto_refresh=False)

    def __enter__(self) -> LiveTable:
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        self._live.stop()

    def add(self, step: StepReport) -> None:
        self.table.add_row(*row(step, str(step.step), step.action, step.outcome))
        self._live.refresh()

    def totals(self, run: RunReport) -> None:
        seconds = "unknown" if run.est_seconds_saved is None else f"~{run.est_seconds_saved:.2f}s saved"
        outcome = ("solved" if run.solved else "not solved") + f", {seconds}"
        self.table.add_section()
        self.table.add_row(*row(run, "total", "", outcome))
        self._live.refresh()
