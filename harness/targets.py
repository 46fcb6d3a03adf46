"""Where a reply's edits are written and tested: the run's own workspace (the agent's reply: its files
remembered for the final diff, the edit undoable, nothing written in a dry run) or a scratch copy of it (a
candidate's: made when the edits get that far, removed with the trial). Both answer write, test and undo,
which is all the pipeline asks of them."""

from __future__ import annotations

import shutil
from pathlib import Path

from deltaserve.harness.workspace_guard import Snapshot, make_copy
from deltaserve.tools.checkpoint import Checkpoint
from deltaserve.tools.patch import PatchResult
from deltaserve.tools.sandbox import Sandbox
from deltaserve.tools.tests import TestResult, run_tests
from deltaserve.tools.workspace import Workspace


class RunWorkspace:
    """The run's workspace: the agent's own reply is written here."""

    def __init__(self, workspace: Workspace, snapshot: Snapshot, sandbox: Sandbox | str, test_cmd: str,
                 timeout: float, dry_run: bool = False):
        self.workspace, self.snapshot, self.dry_run = workspace, snapshot, dry_run
        self.tests = (test_cmd, timeout, sandbox)
        self.checkpoint: Checkpoint | None = None

    def write(self, fmt, edits: list, preview: PatchResult) -> PatchResult:
        self.snapshot.remember(preview.files_changed)
        self.checkpoint = Checkpoint(self.workspace, preview.files_changed)
        return preview if self.dry_run else fmt.apply(edits, self.workspace)

    def test(self) -> TestResult:
        cmd, timeout, sandbox = self.tests
        return run_tests(self.workspace, cmd, timeout=timeout, sandbox=sandbox)

    def undo(self) -> None:
        self.checkpoint.restore()


class ScratchCopy:
    """A copy of `root` made at the first write and removed on leaving the `with` block: a candidate's edits
    are tried here, on the same files, with the agent's tests in the agent's sandbox."""

    def __init__(self, root: Path, sandbox: Sandbox | str, test_cmd: str, timeout: float):
        self.root = Path(root)
        self.tests = (test_cmd, timeout, sandbox)
        self.copy: Path | None = None

    def __enter__(self) -> ScratchCopy:
        return self

    def __exit__(self, *exc) -> None:
        if self.copy is not None:
            shutil.rmtree(self.copy.parent, ignore_errors=True)

    def write(self, fmt, edits: list, preview: PatchResult) -> PatchResult:
        self.copy = make_copy(self.root)
        return fmt.apply(edits, Workspace(self.copy))

    def test(self) -> TestResult:
        cmd, timeout, sandbox = self.tests
        return run_tests(Workspace(self.copy), cmd, timeout=timeout, sandbox=sandbox)

    def undo(self) -> None:
        """Nothing to undo on a copy that goes away."""
