"""The live terminal table: one row per step as it finishes, then a totals row.

It fits the console's width: the columns a narrow terminal cannot hold are left out by priority (the step,
its outcome and the savings last) and headers shortened; the table's caption names what was left out, and
every figure stays in the JSONL trace (`fix --trace`). A log or pipe gets every column, unless $COLUMNS
sets a width.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from deltaserve.harness.accounting import RunReport, StepReport


@dataclass(frozen=True)
class Column:
    name: str
    short: str  # the header where the full one does not fit
    priority: int  # 0 is kept longest
    width: int  # the widest value expected (the column grows for a wider one)


SPECS = [
    Column("step", "step", 0, 5),
    Column("action", "act", 4, 6),
    Column("prompt", "prompt", 2, 7),
    Column("cached", "cached", 1, 7),
    Column("completion", "compl", 2, 7),
    Column("passes", "pass", 6, 7),
    Column("whole-file", "whole", 3, 7),
    Column("decode saved", "saved", 1, 7),
    Column("passes saved", "p.sav", 7, 7),
    Column("TTFT s", "ttft", 5, 6),
    Column("decode s", "dec s", 5, 6),
    Column("outcome", "outcome", 0, 18),
]
COLUMNS = [c.name for c in SPECS]
MIN_WIDTH = 165  # every column with its full header; what a log file or pipe gets (rich would assume 80)


def table_width(widths: list[int]) -> int:
    """Characters a rich table of columns this wide takes: a border and a space either side of each."""
    return sum(widths) + 3 * len(widths) + 1


def fitting_columns(width: int) -> tuple[list[Column], bool]:
    """The columns shown at `width` (in their order) and whether headers are the short ones: every column
    with full headers where that fits, else short headers and the columns of lowest priority left out."""
    if table_width([max(len(c.name), c.width) for c in SPECS]) <= width:
        return SPECS, False
    kept = sorted(SPECS, key=lambda c: c.priority)
    while len(kept) > 2 and table_width([max(len(c.short), c.width) for c in kept]) > width:
        kept.pop()
    return [c for c in SPECS if c in kept], True


def _n(value) -> str:
    if value is None:
        return "unknown"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def row(r: StepReport | RunReport, label: str, action: str, outcome: str) -> list[str]:
    """Every column's text, in COLUMNS' order."""
    figures = (r.prompt_tokens, r.cached_tokens, r.completion_tokens, r.decode_passes, r.whole_file_tokens,
               r.decode_saved, r.decode_passes_saved, r.ttft_s, r.decode_s)
    return [label, action, *map(_n, figures), outcome]


class Activity:
    """The line under the table while a step runs: what it is doing and for how long (read at each refresh);
    nothing between steps."""

    def __init__(self) -> None:
        self.text: str | None = None
        self.began = 0.0

    def set(self, text: str | None) -> None:
        self.text, self.began = text, time.monotonic()

    def __rich__(self) -> Text:
        if self.text is None:
            return Text("")
        return Text(f"{self.text} ... {time.monotonic() - self.began:.0f} s", style="dim")


class LiveTable:
    def __init__(self, title: str = "", console: Console | None = None):
        self.console = console or Console()
        if not self.console.is_terminal and "COLUMNS" not in os.environ and self.console.width < MIN_WIDTH:
            self.console.width = MIN_WIDTH
        self.columns, short = fitting_columns(self.console.width)
        left_out = [c.name for c in SPECS if c not in self.columns]
        caption = f"left out at this width: {', '.join(left_out)} (all in --trace)" if left_out else None
        self.table = Table(title=title, caption=caption)
        for c in self.columns:
            justify = "left" if c.name in ("action", "outcome") else "right"
            wraps = c.name == "outcome"  # the one column that may take two lines rather than be cut
            self.table.add_column(c.short if short else c.name, justify=justify, no_wrap=not wraps,
                                  min_width=c.width if wraps else None)
        self.activity = Activity()
        # a terminal sees the activity's seconds go by; a log or pipe gets the table once, at the end
        self._live = Live(Group(self.table, self.activity), console=self.console,
                          auto_refresh=self.console.is_terminal, refresh_per_second=1)

    def start(self) -> None:
        self._live.start()

    def stop(self) -> None:
        self.activity.set(None)
        self._live.stop()
        if not self.console.is_terminal:
            self.console.line()  # Live leaves the cursor after the table's last line

    def working(self, text: str) -> None:
        """Show what the running step is doing, until its row comes."""
        self.activity.set(text)
        self._live.refresh()

    def _add(self, cells: list[str]) -> None:
        shown = [cell for spec, cell in zip(SPECS, cells, strict=True) if spec in self.columns]
        self.table.add_row(*shown)
        self.activity.set(None)
        self._live.refresh()

    def add(self, step: StepReport) -> None:
        self._add(row(step, str(step.step), step.action, step.outcome))

    def totals(self, run: RunReport) -> None:
        seconds = ("est. seconds saved unknown" if run.est_seconds_saved is None
                   else f"est. {run.est_seconds_saved:.1f}s saved")
        outcome = ("solved" if run.solved else "not solved") + f", {seconds}"
        self.table.add_section()
        self._add(row(run, "total", "", outcome))
