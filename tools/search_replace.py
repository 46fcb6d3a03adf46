"""aider-style SEARCH/REPLACE blocks: parsing, and turning one block into a hunk.

    path/to/file.py
    ```python
    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE
    ```

(the arrows may be missing: `SEARCH`, `=======`, `REPLACE` alone on their lines are read the same; a path
in place of the word, `<<<<<<< path/to/file.py`, opens a block for that file, and a path after the divider
or the closing arrows, `======= path/to/file.py`, `>>>>>>> path/to/file.py`, as Qwen2.5-Coder-1.5B writes
them, is read as the plain marker). The
filename is the nearest non-fence line above the block (or a path in the fence's info string); a block
with no filename above it continues the previous block's file, as in aider. Prose and fences around blocks
are ignored. A block becomes a hunk via difflib (equal lines -> context, the rest
-> removed/added), so it is located exactly like a diff hunk and unchanged lines are taken from the file.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from deltaserve.errors import PatchError
from deltaserve.tools.diff_parse import looks_like_path, path_in_info
from deltaserve.tools.fences import fence_line
from deltaserve.tools.hunks import Hunk
from deltaserve.tools.textfile import split_lines

# Small models write the markers loosely: `SEARCH` / `=======` / `REPLACE` alone on a line without the
# arrows, or aider's older ORIGINAL / UPDATED words. A bare word must be the whole line (never prose).
# `<<<<<<< pkg/mod.py`: the path in place of the word
_SEARCH = re.compile(r"^\s*(?:<{5,9}\s*(?i:SEARCH|ORIGINAL)\b.*|(?:SEARCH|ORIGINAL):?"
                     r"|<{7}\s*(?P<path>\S+))\s*$")
_DIVIDER = re.compile(r"^\s*={5,9}(?:\s+(?P<path>\S+))?\s*$")
_REPLACE = re.compile(r"^\s*(?:>{5,9}\s*(?i:REPLACE|UPDATED)\b.*|(?:REPLACE|UPDATED):?"
                      r"|>{7}\s*(?P<path>\S+))\s*$")
# `<<<<<<< HEAD` (or another word that is no path): a conflict marker, read as a SEARCH line only where a
# ======= line and a REPLACE line follow it, the shape of a block written in git's conflict style


def _tag(line: str) -> str | None:
    """The word after a SEARCH line's arrows in place of SEARCH (`<<<<<<< quarter_of`), else None."""
    m = _SEARCH.match(line)
    return m["path"] if m else None


def _named_as_allowed(m: re.Match | None, tag: str | None) -> bool:
    """A marker line whose word after the marker, if any, is a path or the block's own `tag`."""
    return bool(m) and (not m["path"] or m["path"] == tag or looks_like_path(m["path"]) is not None)


def _is_divider(line: str, tag: str | None = None) -> bool:
    """A ======= line, bare or followed by a path or by the block's own `tag`."""
    return _named_as_allowed(_DIVIDER.match(line), tag)


def _is_closing(line: str, tag: str | None = None) -> bool:
    """A REPLACE line; `>>>>>>> word` when the word is a path or the block's own `tag` (the 1.5B model
    labels all three markers with the function it edits: `<<<<<<< quarter_of` ... `>>>>>>> quarter_of`)."""
    return _named_as_allowed(_REPLACE.match(line), tag)


@dataclass(frozen=True)
class SearchReplace:
    path: str
    search: str
    replace: str



def _filename_above(lines: list[str], i: int, previous: str | None) -> str | None:
    j = i - 1
    while j >= 0:
        line = lines[j]
        if _is_closing(line):
            return previous  # another block in the same fence: same file
        if not line.strip():
            j -= 1
            continue
        fence = fence_line(line)
        if fence is not None:
            named = path_in_info(fence)
            if named:
                return named
            j -= 1
            continue
        # Prose above the block: like aider, a block without its own filename continues the previous file.
        return looks_like_path(line) or previous
    return previous


def _opening(line: str) -> str | None:
    """The path a SEARCH line names (`<<<<<<< pkg/mod.py`), "" for a plain SEARCH line, None for no SEARCH
    line (`<<<<<<< HEAD`, a conflict marker, names no file)."""
    m = _SEARCH.match(line)
    if not m:
        return None
    if not m["path"]:
        return ""
    return looks_like_path(m["path"])


def _conflict_style_block_at(lines: list[str], i: int) -> bool:
    """`<<<<<<< HEAD`, old lines, `=======`, new lines, `>>>>>>> REPLACE`: a block whose SEARCH line is a
    conflict marker."""
    if not _SEARCH.match(lines[i]):
        return False
    tag = _tag(lines[i])
    j = _next_marker(lines, i + 1, tag)
    if j >= len(lines) or not _is_divider(lines[j], tag):
        return False
    k = _next_marker(lines, j + 1, tag)
    return k < len(lines) and _is_closing(lines[k], tag)


def _next_marker(lines: list[str], start: int, tag: str | None = None) -> int:
    """Index of the first SEARCH, ======= or REPLACE line from `start` on (len(lines) when there is none);
    `tag`: the word the block's SEARCH line has in place of SEARCH, which its other markers may repeat."""
    for j in range(start, len(lines)):
        if _opening(lines[j]) is not None or _is_divider(lines[j], tag) or _is_closing(lines[j], tag):
            return j
    return len(lines)


def parse_search_replace_blocks(text: str) -> list[SearchReplace]:
    """Every SEARCH/REPLACE block in a model reply, in order. Raises ValueError (message for the model) on an
    unterminated block or a block without a filename."""
    lines = text.replace("\r\n", "\n").split("\n")
    blocks: list[SearchReplace] = []
    previous: str | None = None
    i = 0
    while i < len(lines):
        opening = _opening(lines[i])
        if opening is None and _conflict_style_block_at(lines, i):
            opening = ""
        if opening is None:
            i += 1
            continue
        n = len(blocks) + 1
        path = opening or _filename_above(lines, i, previous)
        if path is None:
            raise PatchError(
                f"SEARCH/REPLACE block {n} has no file name; put the file's path alone on the line "
                "just before the block (or before its ``` fence).",
                hunk=n,
            )
        tag = _tag(lines[i])
        j = _next_marker(lines, i + 1, tag)
        if j >= len(lines) or not _is_divider(lines[j], tag):
            raise PatchError(f"SEARCH/REPLACE block {n} ({path}) has no ======= line after its SEARCH part.",
                             path, n)
        k = _next_marker(lines, j + 1, tag)
        if k < len(lines) and _is_divider(lines[k], tag):
            # an underline of = in the text (a reStructuredText heading) reads as a divider: which is the
            # real one cannot be told, so the model hears how to write the block instead
            raise PatchError(f"SEARCH/REPLACE block {n} ({path}) has more than one ======= line: a line of "
                             "only '=' characters (a heading's underline) cannot be told from the divider; "
                             "split the change into blocks that leave such lines out.", path, n)
        if k >= len(lines) or not _is_closing(lines[k], tag):
            raise PatchError(f"SEARCH/REPLACE block {n} ({path}) is not closed with a >>>>>>> REPLACE line.",
                             path, n)
        search = "\n".join(lines[i + 1 : j])
        replace = "\n".join(lines[j + 1 : k])
        blocks.append(SearchReplace(path, search + "\n" if search else "", replace + "\n" if replace else ""))
        previous = path
        i = k + 1
    return blocks


def search_replace_hunk(search: str, replace: str) -> Hunk:
    s, r = split_lines(search)[0], split_lines(replace)[0]
    lines: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, s, r, autojunk=False).get_opcodes():
        if tag == "equal":
            lines += [(" ", x) for x in s[i1:i2]]
        else:
            lines += [("-", x) for x in s[i1:i2]]
            lines += [("+", x) for x in r[j1:j2]]
    return Hunk(lines)
