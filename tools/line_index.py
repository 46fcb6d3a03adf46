"""Indexes that keep hunk placement near-linear: a file's lines by matching key, and the ranges taken so far.

Placing H hunks in an N-line file used to cost O(H * N) (every hunk recomputed the keys of every line and
scanned every window) plus O(H^2) for the overlap checks. `LineIndex` computes each key once per file and
maps key -> line positions, so a hunk's candidates come from its rarest source line's positions only;
`TakenRanges` answers "does this range overlap an earlier hunk?" by bisection.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable

WORD = re.compile(r"\w+")

KEYS: dict[str, Callable[[str], str]] = {
    "exact": lambda s: s,
    "rstrip": str.rstrip,
    "indent": str.strip,
}


def overlaps(start: int, length: int, s: int, size: int) -> bool:
    """Whether range (start, length) collides with a taken range (s, size). Zero-length ranges are
    insertions: two at the same spot collide, and so does an insertion strictly inside a replaced block."""
    end, e = start + length, s + size
    if start < e and s < end:
        return True
    return (length == 0 and s < start < e) or (size == 0 and start < s < end) or (length == 0 == size
                                                                                     and s == start)


class TakenRanges:
    """The (start, length) ranges hunks of one file already claimed; pairwise non-colliding by construction,
    so only a range's neighbours in start order can collide with a new one."""

    def __init__(self) -> None:
        self._ranges: list[tuple[int, int]] = []  # sorted by (start, length)

    def add(self, start: int, length: int) -> None:
        bisect.insort(self._ranges, (start, length))

    def overlaps(self, start: int, length: int) -> bool:
        end = start + length
        i = bisect.bisect_left(self._ranges, (start, -1))
        ranges = self._ranges  # walked by index: a slice would copy the list on every call (quadratic)
        for j in range(i, len(ranges)):  # ranges starting at or after `start`
            s, size = ranges[j]
            if s > end:
                break
            if overlaps(start, length, s, size):
                return True
        for j in range(i - 1, -1, -1):  # ranges starting before it, nearest first
            s, size = ranges[j]
            if overlaps(start, length, s, size):
                return True
            if s + size <= start:
                # Taken ranges do not collide with each other, so every earlier one ends by here too.
                return False
        return False


class LineIndex:
    """One file's lines, with each matching key computed once, and line positions by stripped text (the
    loosest key: an exact or rstrip match is a stripped match too, so one table serves all three)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self._keys: dict[str, list[str]] = {"exact": lines}
        self._positions: dict[str, list[int]] | None = None
        self._nonblank: tuple[list[int], list[int]] | None = None

    def keys(self, name: str) -> list[str]:
        if name not in self._keys:
            key = KEYS[name]
            self._keys[name] = [key(x) for x in self.lines]
        return self._keys[name]

    def positions(self) -> dict[str, list[int]]:
        """stripped text -> the (ascending) positions of the lines that strip to it."""
        if self._positions is None:
            table: defaultdict[str, list[int]] = defaultdict(list)
            for i, k in enumerate(self.keys("indent")):
                table[k].append(i)
            self._positions = dict(table)
        return self._positions

    def runs(self, name: str, src: list[str], taken: TakenRanges) -> list[int]:
        """Ascending starts where the source's keys equal a run of the file's keys, not colliding with
        `taken`. Candidates come from the positions of the source's rarest stripped line."""
        table = self.positions()
        key = KEYS[name]
        wanted = [key(x) for x in src]
        n = len(wanted)
        lists = [table.get(x.strip(), []) for x in src]
        anchor = min(range(n), key=lambda j: len(lists[j]))
        keys = self.keys(name) if name != "rstrip" else None  # rstrip: computed for candidates only
        starts = []
        for p in lists[anchor]:
            s = p - anchor
            if s < 0 or s > len(self.lines) - n or taken.overlaps(s, n):
                continue
            window = keys[s : s + n] if keys is not None else [key(x) for x in self.lines[s : s + n]]
            if window == wanted:
                starts.append(s)
        return starts

    def nonblank(self) -> tuple[list[int], list[int]]:
        """(positions of the non-blank lines, and for each line its index in that list; -1 if blank)."""
        if self._nonblank is None:
            stripped = self.keys("indent")
            idx = [i for i, s in enumerate(stripped) if s]
            rank = [-1] * len(stripped)
            for j, i in enumerate(idx):
                rank[i] = j
            self._nonblank = (idx, rank)
        return self._nonblank

    def sharing_words(self, words: set[str]) -> dict[int, int]:
        """line position -> how many of `words` (3+ characters) it contains; one regex pass, for error
        excerpts when no line matches outright."""
        words = {w for w in words if len(w) >= 3}
        if not words:
            return {}
        rx = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + r")\b")
        out = {}
        for i, line in enumerate(self.lines):
            found = rx.findall(line)
            if found:
                out[i] = len(set(found))
        return out
