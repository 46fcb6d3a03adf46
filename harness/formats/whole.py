"""`whole`: the model re-types every file it changes, in full. The baseline the other formats are measured
against: its reply is what `counterfactual` renders for any edit.

Syntax: the file's path alone on a line, then the complete new content in a code fence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NAME = "whole"
NUMBERED_CONTEXT = False

_FENCE_OPEN = re.compile(r"^(`{3,})[\w+.#-]*\s*$")
_PATH = re.compile(r"^[\w./\\-]+$")


@dataclass(frozen=True)
class WholeFile:
    path: str
    content: str


def instructions() -> str:
    return (
        "Edit format: whole files. For every file you change, write its path alone on one line, then the "
        "file's COMPLETE new content in a code fence. Do not skip or abbreviate any part of the file.\n"
        "Example:\n\n"
        "src/greet.py\n```\ndef greet(name):\n    return f\"Hello, {name}!\"\n```"
    )


def render(files: dict[str, str | None]) -> str:
    """Files (path -> content) in whole-format syntax; deleted files (None) cannot be expressed and are skipped."""
    blocks = []
    for path, content in files.items():
        if content is None:
            continue
        fence = "```"
        while any(line.lstrip().startswith(fence) for line in content.split("\n")):
            fence += "`"
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


def parse(reply: str) -> list[WholeFile]:
    """Every fenced block preceded by a line naming a path; prose and unnamed blocks are ignored."""
    lines = reply.split("\n")
    edits: dict[str, str] = {}
    i = 0
    while i < len(lines):
        opening = _FENCE_OPEN.match(lines[i].strip())
        if not opening:
            i += 1
            continue
        fence = opening.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), len(lines))
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        path = _path_from(previous)
        if path is not None:
            edits[path] = "".join(line + "\n" for line in lines[i + 1 : end])
        i = end + 1
    return [WholeFile(path, content) for path, content in edits.items()]


def apply(edits: list[WholeFile], workspace, dry_run: bool = False):
    """Write every file through tools.patch.write_file; all paths are checked before anything is written."""
    from deltaserve.harness.formats._results import merge_results
    from deltaserve.tools.patch import write_file

    checked = [write_file(workspace, e.path, e.content, dry_run=True) for e in edits]  # raises before writing
    if dry_run:
        return merge_results(checked)
    return merge_results([write_file(workspace, e.path, e.content) for e in edits])


def counterfactual(edits: list[WholeFile], workspace) -> str:
    return render(apply(edits, workspace, dry_run=True).new_contents)
