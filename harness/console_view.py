"""The agent on a terminal: a header, the step-0 verdict, the live table of steps (with each reply above its
row, when asked), then why it stopped and the final diff. An observer of the loop (events.py); the loop itself
prints nothing."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from deltaserve.harness.accounting import RunReport, StepReport, TestOutcome
from deltaserve.harness.events import AgentObserver, RunStart, StepDetails
from deltaserve.harness.live_table import MIN_WIDTH, LiveTable
from deltaserve.tools.localize import Localization


class ConsoleView(AgentObserver):
    def __init__(self, console: Console | None = None, show_replies: bool = False):
        self.console = console or Console()
        self.show_replies = show_replies
        if console is None and not self.console.is_terminal and "COLUMNS" not in os.environ:
            # logs and pipes: keep the table's rows whole (unless $COLUMNS sets a width)
            self.console.width = max(self.console.width, MIN_WIDTH)
        self._title = ""
        self._table: LiveTable | None = None

    def on_run_start(self, run: RunStart) -> None:
        self._title = f"{run.model} · {run.edit_format}"
        self.console.print(f"[bold]deltaserve fix[/] {escape(run.workspace)}\n"  # short lines, for 80 columns
                           f"  model={escape(run.model)}  format={run.edit_format}  sandbox={run.sandbox}\n"
                           f"  tests=`{escape(run.test_cmd)}`", highlight=False)

    def on_initial_tests(self, tests: TestOutcome) -> None:
        if tests.ok:
            self.console.print("Tests already pass; nothing to fix.")
            return
        if tests.not_run:
            return  # no table: the run stops here, and on_run_end says why
        self.console.print(f"Step 0: tests fail ({tests.failed} failed, {tests.errors} errors).")
        self._table = LiveTable(title=self._title, console=self.console)
        self._table.start()

    def on_localized(self, localization: Localization) -> None:
        if localization.suspects:
            sites = ", ".join(s.site() for s in localization.suspects)
            self.console.print(f"Coverage suspects, most suspicious first: {escape(sites)} "
                               f"(coverage, {localization.duration_s:.1f}s)")
        else:
            self.console.print(f"No suspects from coverage: {escape(localization.note)}")

    def on_step_activity(self, step: int, activity: str) -> None:
        if self._table is not None:
            self._table.working(f"step {step}: {activity}")

    def on_step(self, step: StepReport, details: StepDetails) -> None:
        if self.show_replies:
            self.console.rule(f"step {step.step}: the model's reply ({step.completion_tokens} tokens)",
                              align="left")
            self.console.print(escape(step.reply), highlight=False)
            self.console.rule()
        if details.dry_run and details.diff:
            files = ", ".join(details.files_changed)
            self.console.print(f"Dry run: these edits were not written to {files}:")
            self.console.print(Syntax(details.diff, "diff", theme="ansi_dark"))
        if step.prefix_break is not None:
            self.console.print(f"Step {step.step}: {escape(step.prefix_break.describe())}")
        if self._table is not None:
            self._table.add(step)

    def on_run_end(self, report: RunReport) -> None:
        table, self._table = self._table, None
        if table is not None:
            if report.stopped:  # else the run ended in an exception: no totals, no verdict
                table.totals(report)
            table.stop()
        elif report.initial_tests is None or report.initial_tests.ok:
            return  # the tests already passed (said at step 0), or the run ended before them
        if not report.stopped:
            return
        self.console.print(f"Stopped: {escape(report.stopped)}")
        if report.final_diff:
            self.console.print(Syntax(report.final_diff, "diff", theme="ansi_dark"))
