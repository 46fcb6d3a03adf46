"""What an agent run reports as it goes. The loop calls its observers; the live table (console_view.py) and
the JSONL trace (trace.py) are two of them, and a caller with neither runs the agent silently."""

from __future__ import annotations

from dataclasses import dataclass

from deltaserve.harness.accounting import RunReport, StepReport, TestOutcome
from deltaserve.tools.localize import Localization

# what a step is doing while it runs (on_step_activity)
ACTIVITY_REPLY = "waiting for the model's reply"
ACTIVITY_TRY = "applying the reply, running the tests"


@dataclass(frozen=True)
class RunStart:
    workspace: str
    model: str
    edit_format: str
    test_cmd: str
    sandbox: str  # where the tests run: tools.sandbox's name for it


@dataclass(frozen=True)
class StepDetails:
    """What a step did beyond its StepReport's figures."""

    feedback: str  # the text sent back to the model
    diff: str = ""  # the edits as a unified diff, when they applied
    files_changed: tuple[str, ...] = ()
    dry_run: bool = False  # the edits were previewed, not written


class AgentObserver:
    """Override the events you need; each default does nothing."""

    def on_run_start(self, run: RunStart) -> None:
        """Before anything runs (the initial tests are next)."""

    def on_initial_tests(self, tests: TestOutcome) -> None:
        """The tests before any edit (step 0); the run ends here when they already pass."""

    def on_localized(self, localization: Localization) -> None:
        """After the failing step 0, when the config asks for it: the code the failing tests run, ranked."""

    def on_step_activity(self, step: int, activity: str) -> None:
        """What step `step` is doing now, before its report (a model reply can take minutes on a CPU)."""

    def on_step(self, step: StepReport, details: StepDetails) -> None:
        """One model call and its outcome, with this run's measured rates attached."""

    def on_run_end(self, report: RunReport) -> None:
        """The run is over (`report.stopped` says why; empty when it ended in an exception)."""
