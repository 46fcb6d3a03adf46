"""Edits refused before anything is written, whatever the format: edits to test files (unless allowed) and
edits that leave every file as it was (a REPLACE identical to its SEARCH, the same file re-typed)."""

from __future__ import annotations

from deltaserve.harness import feedback
from deltaserve.tools.patch import PatchResult
from deltaserve.tools.tests import is_test_path
from deltaserve.tools.workspace import Workspace


def refusal(preview: PatchResult, workspace: Workspace, allow_test_edits: bool) -> tuple[str, str] | None:
    """(outcome, feedback for the model) when the previewed edits must not be applied, else None."""
    tests = [p for p in preview.files_changed if is_test_path(p)]
    if tests and not allow_test_edits:
        return "test edit refused", feedback.test_edits_refused(tests)

    def same(path: str, text: str | None) -> bool:
        return text is not None and workspace.exists(path) and workspace.read_text(path) == text

    if all(same(p, text) for p, text in preview.new_contents.items()):
        return "no-op edit", feedback.no_op_edits(list(preview.new_contents) or ["the files"])
    return None
