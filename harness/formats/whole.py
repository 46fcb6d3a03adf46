"""`whole`: the model re-types every file it changes, in full. The baseline the other formats are measured
against: its reply is what `counterfactual` renders for any edit.

Syntax: the file's path alone on a line, then the complete new content in a code fence.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaserve.tools.fences import fence_for
from deltaserve.tools.named_blocks import named_blocks
from deltaserve.tools.patch import PatchResult, write_file
from deltaserve.tools.workspace import Workspace


@dataclass(frozen=True)
class WholeFile:
    path: str
    content: str


def render(files: dict[str, str | None]) -> str:
    """Files (path -> content) in whole-format syntax; deleted files (None) cannot be expressed and are
    skipped."""
    blocks = []
    for path, content in files.items():
        if content is None:
            continue
        fence = fence_for(content.split("\n"))
        body = content if content.endswith("\n") or not content else content + "\n"
        blocks.append(f"{path}\n{fence}\n{body}{fence}")
    return "\n\n".join(blocks)


def _merge(results: list[PatchResult]) -> PatchResult:
    """One PatchResult for several single-file writes."""
    merged = PatchResult()
    for result in results:
        merged.files_changed += [f for f in result.files_changed if f not in merged.files_changed]
        merged.new_contents.update(result.new_contents)
        merged.hunks += list(result.hunks)
        merged.diff += result.diff
    return merged


class WholeFormat:
    name = "whole"
    numbered_context = False

    def instructions(self) -> str:
        return (
            "Edit format: whole files. For every file you change, write its path alone on one line, then the "
            "file's COMPLETE new content in a code fence. Do not skip or abbreviate any part of the file.\n"
            "The shape of a reply (placeholders, not real code):\n\n"
            "path/to/file.py\n```\n<every line of the corrected file>\n```"
        )

    def parse(self, reply: str) -> list[WholeFile]:
        """Every fenced block that names its file (tools/named_blocks.py); prose and unnamed blocks are
        ignored. A file written twice: the last version wins."""
        edits = {block.path: block.content for block in named_blocks(reply)}
        return [WholeFile(path, content) for path, content in edits.items()]

    def apply(self, edits: list[WholeFile], workspace: Workspace, dry_run: bool = False) -> PatchResult:
        """Write every file through tools.patch.write_file; all paths are checked before anything is
        written."""
        checked = [write_file(workspace, e.path, e.content, dry_run=True) for e in edits]  # raises first
        if dry_run:
            return _merge(checked)
        return _merge([write_file(workspace, e.path, e.content) for e in edits])

    def counterfactual(self, edits: list[WholeFile], workspace: Workspace) -> str:
        return render(self.apply(edits, workspace, dry_run=True).new_contents)
