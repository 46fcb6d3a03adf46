"""`auto`: the agent picks the edit format per step (harness/format_choice.py). Its system prompt describes
the first step's format as that format's own prompt would, and says another may follow; a step that
switches to a format not described yet describes it in its message. Nothing sent is rewritten, so the
cached prefix holds, and a small model reads one format, not four (Qwen2.5-Coder-1.5B re-typed a file
unchanged under the four-format prompt where the whole-file prompt got it fixed).

On its own (another agent calling `formats.get("auto")`), `parse` recognises whichever syntax a reply is
in: SEARCH/REPLACE blocks, a unified diff, else named code blocks, read as whole functions for Python files
(`symbol`: never deletes what the block leaves out) and as whole files otherwise. `apply` dispatches on
the edits' type.

Within a run, `AskedFormat` reads the reply to a step that asked for one format, for the agent and for
every candidate of the step alike (a candidate tried one way and kept, then applied another way, passed
its tests on the scratch copy and failed them in the workspace: a-median, a whole-file step answered with
the one function, which the candidate read as that function and the agent as the whole file).
"""

from __future__ import annotations

import ast

from deltaserve.harness.formats.search_replace import SearchReplaceFormat
from deltaserve.harness.formats.symbol import SymbolEdit, SymbolFormat
from deltaserve.harness.formats.udiff import UdiffFormat
from deltaserve.harness.formats.whole import WholeFile, WholeFormat, render
from deltaserve.tools.patch import PatchResult, SearchReplace
from deltaserve.tools.symbols import definitions
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
    reads_definitions = True  # named Python blocks as definitions: a cut reply keeps its complete ones

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


class AskedFormat(AutoFormat):
    """A reply to a step of `auto` that asked for `asked`: the syntaxes with markers first (in a code block
    after a path, SEARCH/REPLACE blocks or a diff would pass for a whole file), then `asked`'s, then any.
    A whole-file reply to an existing Python file that defines some of its functions and classes and
    leaves others out is read as those functions (`symbol`): re-typing only the function it fixes is what
    a small model does, and read as the file it would delete the rest."""

    def __init__(self, asked):
        self.asked = asked
        self.name = asked.name

    def instructions(self) -> str:
        return self.asked.instructions()

    def parse(self, reply: str) -> list:
        order = dict.fromkeys([MEMBERS["search_replace"], MEMBERS["udiff"], self.asked, MEMBERS["symbol"],
                               MEMBERS["whole"]])
        for fmt in order:
            edits = fmt.parse(reply)
            if edits:
                return edits
        return []

    def apply(self, edits: list, workspace: Workspace, dry_run: bool = False) -> PatchResult:
        return super().apply(retyped_in_part(edits, workspace), workspace, dry_run=dry_run)


def retyped_in_part(edits: list, workspace: Workspace) -> list:
    """`edits` with whole Python files that leave out some of the existing file's top-level definitions
    (and define at least one) as SymbolEdits; all or none, so the edits stay of one format."""
    if not edits or not all(isinstance(e, WholeFile) for e in edits):
        return edits
    for edit in edits:
        if not edit.path.endswith(".py") or edit.content is None or not workspace.exists(edit.path):
            return edits
        old, new = _top_level_names(workspace.read_text(edit.path)), _top_level_names(edit.content)
        if not new or not old - new:
            return edits
    return [SymbolEdit(e.path, e.content) for e in edits]


def _top_level_names(source: str) -> set[str]:
    try:
        return {name for name in definitions(ast.parse(source)) if "." not in name}
    except (SyntaxError, ValueError):
        return set()


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
