"""The live terminal table: one row per step as it finishes, then a totals row."""

from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.table import Table

from deltaserve.harness.accounting import RunReport, StepReport

COLUMNS = ["step", "action", "prompt", "cached", "completion", "passes", "whole-file", "decode saved",
           "passes saved", "TTFT s", "decode s", "outcome"]
MIN_WIDTH = 165  # the columns need this much; a log file or pipe gets it (rich would assume 80)


def _n(value) -> str:
    if value is None:
        return "unknown"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def row(r: StepReport | RunReport, label: str, action: str, outcome: str) -> list[str]:
    figures = (r.prompt_tokens, r.cached_tokens, r.completion_tokens, r.decode_passes, r.whole_file_tokens,
               r.decode_saved, r.decode_passes_saved, r.ttft_s, r.decode_s)
    return [label, action, *map(_n, figures), outcome]


class LiveTable:
    def __init__(self, title: str = "", console: Console | None = None):
        self.console = console or Console()
        if not self.console.is_terminal and self.console.width < MIN_WIDTH:
            self.console.width = MIN_WIDTH
        self.table = Table(title=title)
        for name in COLUMNS:
            justify = "left" if name in ("action", "outcome") else "right"
            self.table.add_column(name, justify=justify, no_wrap=True)
        self._live = Live(self.table, console=self.console, auto_refresh=False)

    def start(self) -> None:
        self._live.start()

    def stop(self) -> None:
        self._live.stop()
        if not self.console.is_terminal:
            self.console.line()  # Live leaves the cursor after the table's last line

    def add(self, step: StepReport) -> None:
        self.table.add_row(*row(step, str(step.step), step.action, step.outcome))
        self._live.refresh()

    def totals(self, run: RunReport) -> None:
        seconds = ("est. seconds saved unknown" if run.est_seconds_saved is None
                   else f"est. {run.est_seconds_saved:.1f}s saved")
        outcome = ("solved" if run.solved else "not solved") + f", {seconds}"
        self.table.add_section()
        self.table.add_row(*row(run, "total", "", outcome))
        self._live.refresh()
