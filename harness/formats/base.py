"""The one interface every edit format implements, so the agent, the evals and other agents can drive any
format by name without knowing its syntax."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from deltaserve.tools.patch import PatchResult
from deltaserve.tools.workspace import Workspace


@runtime_checkable
class EditFormat(Protocol):
    """How a model writes edits, and how those edits reach the workspace.

    `parse` is tolerant of prose and code fences and returns [] when a reply holds no edits (it raises a
    PatchError, whose message the model can read, for a malformed edit). `apply` is all or nothing: it raises
    PatchError and writes nothing when any edit fails, and writes nothing at all with `dry_run`.
    """

    name: str
    numbered_context: bool  # show line numbers in the repository context the model sees?

    def instructions(self) -> str:
        """What the model is told about the syntax, with one tiny example."""
        ...

    def parse(self, reply: str) -> list[Any]:
        """The edits in a model reply, in order (their type is the format's own)."""
        ...

    def apply(self, edits: list[Any], workspace: Workspace, dry_run: bool = False) -> PatchResult:
        """Apply `edits` (from `parse`) to the workspace."""
        ...

    def counterfactual(self, edits: list[Any], workspace: Workspace) -> str:
        """The `whole`-format reply that would carry the same edits (the baseline they are measured by)."""
        ...
