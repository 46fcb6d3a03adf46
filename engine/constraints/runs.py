"""Runs of a file's whole lines as the tools place them: a SEARCH text or a hunk's old lines apply only where
they hold a non-blank line and are found at one line start of the file (the tools refuse a run of blank lines
and one that matches two places). Shared by the edit automata (search_replace.py, udiff.py)."""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

from deltaserve.engine.constraints.threads import line_starts


def found_once(f: bytes, start: int, end: int) -> bool:
    """Whether the whole lines f[start:end] are found at no other line start of f."""
    text, once = _lines_of(f)
    newline = f.rfind(b"\n", start, end - 1)  # before the run's last line, if the run has two or more
    if f[newline + 1 if newline != -1 else start:end] in once:  # its last line is: the common case
        return True
    lines = b"\n" + f[start:end]
    return text.find(lines, text.find(lines) + 1) == -1


def placeable(f: bytes, start: int, end: int) -> bool:
    """Whether the whole lines f[start:end] are a run the tools place: one holds text, and it is found
    once."""
    return bool(f[start:end].strip()) and found_once(f, start, end)


def unique_run_end(f: bytes, start: int, end: int) -> int:
    """The least line end at or after `end` where the run from `start` is placeable (the file's end if none
    is)."""
    while not placeable(f, start, end) and end < len(f):
        end = f.find(b"\n", end) + 1
    return end


@lru_cache(maxsize=64)
def closable_starts(f: bytes) -> tuple[int, ...]:
    """The line starts a run may start from: those from which some run holds a non-blank line and is found
    once. A run that is both stays so as it grows, so the run to the file's end tells; from any other start a
    run could never apply. A run to the end found once is found once from any earlier start too, so the last
    such start is bisected."""
    starts = line_starts(f)
    last_text = max((k for k, s in enumerate(starts) if f[s:f.index(b"\n", s)].strip()), default=-1)
    lo, hi = 0, last_text + 1  # starts[:lo] are found once to the end; starts[hi:] are not (or blank)
    while lo < hi:
        mid = (lo + hi) // 2
        if found_once(f, starts[mid], len(f)):
            lo = mid + 1
        else:
            hi = mid
    return starts[:lo]


@lru_cache(maxsize=64)
def _lines_of(f: bytes) -> tuple[bytes, frozenset[bytes]]:
    """The file after a newline (a line start is a newline before), and its lines found once."""
    counts = Counter(f.splitlines(keepends=True))
    return b"\n" + f, frozenset(line for line, n in counts.items() if n == 1)
