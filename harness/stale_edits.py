"""SEARCH blocks that quote a file as it was before the run's own edits, re-aimed at those lines as they are.

The first prompt shows each file once and is never re-sent (the prefix cache keeps it), so after an edit
has been kept a model, a small one above all, copies its next SEARCH text from that first view: lines the
earlier edit has since changed. Such a block matches nothing now, yet it says exactly which lines it means.
When its SEARCH text is found once in the file's text from before the run (whitespace at the line ends
aside, and the same indentation shift throughout), the lines it covers are followed through the edits made
since (difflib's alignment of the two texts; a changed block it touches is taken whole) and the block's
SEARCH becomes those lines as they are now, shifted the way the model shifted them. Its REPLACE, the
model's new version, then replaces them. Anything else stays as written: an apply error the model is told
about.
"""

from __future__ import annotations

import dataclasses
import difflib

from deltaserve.errors import DeltaserveError
from deltaserve.tools.search_replace import SearchReplace
from deltaserve.tools.workspace import Workspace


@dataclasses.dataclass(frozen=True)
class Rebased:
    path: str
    start: int  # 1-based first line, in the file as it is now, that the block now replaces
    end: int  # last line, inclusive


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _matches(search: list[str], lines: list[str]) -> list[int]:
    """Where `search` matches `lines`, each line compared without its indentation (stripped once: the file
    is scanned at every position)."""
    wanted = [line.strip() for line in search]
    stripped = [line.strip() for line in lines]
    n = len(wanted)
    return [i for i in range(len(stripped) - n + 1)
            if stripped[i] == wanted[0] and stripped[i:i + n] == wanted]


def _found_once(search: list[str], lines: list[str]) -> tuple[int, int] | None:
    """(start, shift): where `search` matches `lines` once with one indentation shift for all its
    non-blank lines (lines[i] indent = search indent + shift), else None."""
    hits = _matches(search, lines)
    if len(hits) != 1:
        return None
    start = hits[0]
    shifts = {_indent(lines[start + k]) - _indent(line) for k, line in enumerate(search) if line.strip()}
    return (start, shifts.pop()) if len(shifts) == 1 else None


def _follow(original: list[str], current: list[str], start: int, end: int) -> tuple[int, int]:
    """The lines of `current` (start, end: exclusive) that lines start..end-1 of `original` became; a
    changed block either end falls in is taken whole."""
    ops = difflib.SequenceMatcher(None, original, current, autojunk=False).get_opcodes()

    def where(line: int, after: bool) -> int:
        for tag, i1, i2, j1, j2 in ops:
            if i1 <= line < i2:
                if tag == "equal":
                    return j1 + (line - i1) + after
                return j2 if after else j1
        return len(current)

    return where(start, False), where(end - 1, True)


def _shifted(lines: list[str], shift: int) -> list[str] | None:
    """`lines` with `shift` columns of indentation taken off (None when a line has fewer)."""
    if shift <= 0:
        return [" " * -shift + line if line else line for line in lines]
    if any(line.strip() and _indent(line) < shift for line in lines):
        return None
    return [line[shift:] for line in lines]


def rebase_stale_blocks(edits: list, workspace: Workspace,
                        originals: dict[str, str | None]) -> tuple[list, list[Rebased]]:
    """(edits with stale SEARCH blocks re-aimed, what was re-aimed); `originals`: the run's changed files'
    text before its first edit (None: created by the run)."""
    out, rebased = [], []
    for edit in edits:
        original = _original(edit, workspace, originals)
        if original is None:
            out.append(edit)
            continue
        current = _lines(workspace.read_text(edit.path))
        search = _lines(edit.search.strip("\n"))
        if _matches(search, current):
            out.append(edit)  # it matches as it is (once or several times): the tools decide
            continue
        before = _lines(original)
        found = _found_once(search, before)
        if found is None:
            out.append(edit)
            continue
        start, shift = found
        new_start, new_end = _follow(before, current, start, start + len(search))
        now = _shifted(current[new_start:new_end], shift)
        if not now or not any(line.strip() for line in now):
            out.append(edit)
            continue
        out.append(dataclasses.replace(edit, search="\n".join(now) + "\n"))
        rebased.append(Rebased(edit.path, new_start + 1, new_end))
    return out, rebased


def _original(edit, workspace: Workspace, originals: dict[str, str | None]) -> str | None:
    """The text before the run of the existing file a SEARCH block edits, if the run has changed it."""
    if not isinstance(edit, SearchReplace) or not edit.search.strip():
        return None
    try:
        rel = workspace.relpath(edit.path)
        return originals.get(rel) if workspace.exists(rel) else None
    except DeltaserveError:  # a refused path: the apply says why
        return None
