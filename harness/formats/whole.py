"""`whole`: the model re-types every file it changes, in full. The baseline the other formats are measured
against: its reply is what `counterfactual` renders for any edit.

Syntax: the file's path alone on a line, then the complete new content in a code fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deltaserve.tools.fences import fence_for, fenced_blocks
from deltaserve.tools.patch import PatchResult, write_file
from deltaserve.tools.workspace import Workspace

_PATH = re.compile(r"^[\w./\\-]+$")


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


def _path_from(line: str) -> str | None:
    """The file path a line names, if it looks like one (`**a/b.py**`, `File: a/b.py:`, `# a/b.py`)."""
    text = line.strip().strip("*`:").strip()
    text = re.sub(r"^(#+\s*|(file|path)\s*:\s*)", "", text, flags=re.IGNORECASE).strip().strip("*`:")
    if text and _PATH.match(text) and ("." in text or "/" in text) and not text.startswith("."):
        return text
    return None


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
            "Example:\n\n"
            "src/greet.py\n```\ndef greet(name):\n    return f\"Hello, {name}!\"\n```"
        )

    def parse(self, reply: str) -> list[WholeFile]:
        """Every fenced block preceded by a line naming a path; prose and unnamed blocks are ignored."""
        lines = reply.split("\n")
        edits: dict[str, str] = {}
        for block in fenced_blocks(lines):
            previous = next((lines[j] for j in range(block.start - 1, -1, -1) if lines[j].strip()), "")
            path = _path_from(previous)
            if path is not None:
                edits[path] = "".join(line + "\n" for line in block.body)
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
