"""`auto`: the agent picks the edit format per step (harness/format_choice.py). Its system prompt describes
the first step's format as that format's own prompt would, and says another may follow; a step that
switches to a format not described yet describes it in its message. Nothing sent is rewritten, so the
cached prefix holds, and a small model reads one format, not four (Qwen2.5-Coder-1.5B re-typed a file
unchanged under the four-format prompt where the whole-file prompt got it fixed).

On its own (another agent calling `formats.get("auto")`), `parse` recognises whichever syntax a reply is
in: SEARCH/REPLACE blocks, a unified diff, else named code blocks, read as whole functions for Python files
(`symbol`: never deletes what the block leaves out) and as whole files otherwise. `apply` dispatches on
the edits' type.
"""

from __future__ import annotations

from deltaserve.harness.formats.search_replace import SearchReplaceFormat
from deltaserve.harness.formats.symbol import SymbolEdit, SymbolFormat
from deltaserve.harness.formats.udiff import UdiffFormat
from deltaserve.harness.formats.whole import WholeFile, WholeFormat, render
from deltaserve.tools.patch import PatchResult, SearchReplace
from deltaserve.tools.workspace import Workspace

MEMBERS = {fmt.name: fmt for fmt in (WholeFormat(), SymbolFormat(), SearchReplaceFormat(), UdiffFormat())}


SWITCH_NOTE = "A later message may ask for another edit format; it will describe that format."


def opening(name: str) -> str:
    """The system prompt's format instructions for a run whose first step uses `name`."""
    return f"{MEMBERS[name].instructions()}\n\n{SWITCH_NOTE}"


def switch_note(name: str) -> str:
    """The message part that moves the next reply to `name`, a format the prompt has not described."""
    return f"Your next reply uses another edit format. {MEMBERS[name].instructions()}"


class AutoFormat:
    name = "auto"
    numbered_context = False  # re-typing and SEARCH/REPLACE formats need the text exactly as it is

    def instructions(self) -> str:
        """Every format (for a caller that names the format per message itself; the agent describes one at
        a time: `opening`, `switch_note`)."""
        parts = ["Edit formats: each message names the one to use for your reply (`whole`, `symbol`, "
                 "`search_replace` or `udiff`)."]
        parts += [f"`{name}`: {fmt.instructions()}" for name, fmt in MEMBERS.items()]
        return "\n\n".join(parts)

    def parse(self, reply: str) -> list:
        for name in ("search_replace", "udiff", "symbol", "whole"):
            edits = MEMBERS[name].parse(reply)
            if edits:
                return edits
        return []

    def apply(self, edits: list, workspace: Workspace, dry_run: bool = False) -> PatchResult:
        return member_for(edits).apply(edits, workspace, dry_run=dry_run)

    def counterfactual(self, edits: list, workspace: Workspace) -> str:
        return render(self.apply(edits, workspace, dry_run=True).new_contents)


def member_for(edits: list):
    """The format whose parse made these edits."""
    if all(isinstance(e, WholeFile) for e in edits):
        return MEMBERS["whole"]
    if all(isinstance(e, str) for e in edits):
        return MEMBERS["udiff"]
    if all(isinstance(e, SearchReplace) for e in edits):
        return MEMBERS["search_replace"]
    if all(isinstance(e, SymbolEdit | SearchReplace) for e in edits):
        return MEMBERS["symbol"]
    raise TypeError("edits from different formats cannot be applied together")
