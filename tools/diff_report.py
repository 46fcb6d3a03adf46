"""The unified diff an applied edit reports: difflib's text, found in time linear in the edit.

`difflib.unified_diff` searches the two versions of a file again and again for their longest common run of
lines: 3,000 one-line hunks on a 12,000-line file took 64 s to report after 0.13 s to place. An edit knows
the spans of lines it replaced, and outside them the two versions are the same, line for line.
`_SpanMatcher` is difflib's matcher told so: its search of a large region picks from the stretches of equal
lines between the spans (each scored as difflib scores a match) instead of scanning the region; the rest
(small regions, the order matches are taken in, autojunk, opcodes, their grouping into hunks) is difflib's
own. So the report is the text `difflib.unified_diff` writes, byte for byte, unless a match across
stretches (code moved from one hunk's place to another's, a file repeating itself, runs of recurring lines
as long as the stretches between hunks a few lines apart) beats every stretch of a large region or ties
with the best and comes first; the report then pairs the lines as the edit did (difflib pairs them with
lines far away), still a diff from the old file to the new.

Spans are in the edited file's lines (tools.textfile); a line that `str.splitlines` cuts in several (a
form feed, a lone CR) is mapped here, and a line outside the spans that differs (a final newline an edit
added beside its hunk) becomes a span of its own.
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from deltaserve.tools.textfile import TextFile

CONTEXT = 3  # difflib.unified_diff's default, the report's context lines


@dataclass(frozen=True)
class Span:
    """old[old_start:old_end] became new[new_start:new_end] (0-based, ends exclusive)."""

    old_start: int
    old_end: int
    new_start: int
    new_end: int

    @property
    def growth(self) -> int:
        return (self.new_end - self.new_start) - (self.old_end - self.old_start)


# None where an edit does not say which lines it replaced (a whole-file write): the whole file is one span
Spans = list[Span] | None


def replaced(replacements: Iterable[tuple[int, int, int]]) -> list[Span]:
    """Spans of (start, length, new length) replacements of one file's lines, each in the old file's lines
    and applied together (the hunks of one diff)."""
    spans, growth = [], 0
    for start, length, new_length in sorted(replacements, key=lambda r: r[0]):
        spans.append(Span(start, start + length, start + growth, start + growth + new_length))
        growth += new_length - length
    return spans


def compose(first: Spans, then: Spans) -> Spans:
    """The spans old -> new of an edit `first` (old -> mid) followed by an edit `then` (mid -> new):
    spans that overlap or touch in mid's lines become one."""
    if first is None or then is None:
        return None
    # (mid start, mid end, growth old -> mid, growth mid -> new) of every span of either edit
    marks = sorted([(s.new_start, s.new_end, s.growth, 0) for s in first]
                   + [(s.old_start, s.old_end, 0, s.growth) for s in then])
    out: list[Span] = []
    behind_first = ahead_then = 0  # growth of the clusters before this one, by each edit
    cluster = None
    for lo, hi, grew_first, grew_then in marks:
        if cluster is not None and lo <= cluster[1]:
            cluster = (cluster[0], max(cluster[1], hi), cluster[2] + grew_first, cluster[3] + grew_then)
            continue
        if cluster is not None:
            out.append(_mid_cluster_span(cluster, behind_first, ahead_then))
            behind_first, ahead_then = behind_first + cluster[2], ahead_then + cluster[3]
        cluster = (lo, hi, grew_first, grew_then)
    if cluster is not None:
        out.append(_mid_cluster_span(cluster, behind_first, ahead_then))
    return out


def _mid_cluster_span(cluster: tuple[int, int, int, int], behind_first: int, ahead_then: int) -> Span:
    lo, hi, grew_first, grew_then = cluster
    return Span(lo - behind_first, hi - behind_first - grew_first, lo + ahead_then,
                hi + ahead_then + grew_then)


def unified_diff(before: TextFile | None, after: TextFile | None, rel: str, spans: Spans) -> str:
    """What `difflib.unified_diff` says of the file `rel` going from `before` to `after` (None: absent),
    CRLF read as LF, knowing that the two differ only inside `spans` (None: anywhere)."""
    old, new = _report_lines(before), _report_lines(after)
    if before is None or after is None:
        spans = None  # a file created or deleted: all its lines
    elif spans is not None:
        spans = _in_report_lines(spans, before, after, old, new)
        spans = _checked(spans, old, new) if spans is not None else None
    lines = []
    for group in _SpanMatcher(old, new, spans).get_grouped_opcodes(CONTEXT):
        if not lines:
            lines += [f"--- {f'a/{rel}' if before is not None else '/dev/null'}\n",
                      f"+++ {f'b/{rel}' if after is not None else '/dev/null'}\n"]
        lines += _hunk_lines(group, old, new)
    return "".join(lines)


def _report_lines(tf: TextFile | None) -> list[str]:
    return tf.text.replace("\r\n", "\n").splitlines(keepends=True) if tf is not None else []


def _in_report_lines(spans: list[Span], before: TextFile, after: TextFile, old: list[str],
                     new: list[str]) -> Spans:
    """`spans` in report lines, where a file line that splitlines cuts in several counts as several; None
    for a span past the end of a file."""
    if any(s.old_end > len(before.lines) or s.new_end > len(after.lines) for s in spans):
        return None
    old_at, new_at = _line_starts(before, old), _line_starts(after, new)
    return [Span(old_at[s.old_start], old_at[s.old_end], new_at[s.new_start], new_at[s.new_end])
            for s in spans]


def _line_starts(tf: TextFile, report: list[str]) -> list[int] | range:
    """The report line each file line starts at, and the count at the end (the same numbers as a rule)."""
    if len(report) == len(tf.lines):
        return range(len(report) + 1)
    starts = [0]
    for line, end in zip(tf.lines, tf.endings, strict=True):
        starts.append(starts[-1] + len((line + end).replace("\r\n", "\n").splitlines()))
    return starts


def _checked(spans: list[Span], old: list[str], new: list[str]) -> Spans:
    """`spans`, and a one-line span for each line outside them that differs (a final newline added or taken
    away beside a hunk's lines); None when they do not line the two versions up."""
    out: list[Span] = []
    a = b = 0
    for s in [*spans, Span(len(old), len(old), len(new), len(new))]:
        gap = s.old_start - a
        if gap < 0 or s.new_start - b != gap or s.old_end < s.old_start or s.new_end < s.new_start:
            return None
        out += [Span(a + k, a + k + 1, b + k, b + k + 1) for k in range(gap) if old[a + k] != new[b + k]]
        out.append(s)
        a, b = s.old_end, s.new_end
    return out[:-1]


@dataclass(frozen=True)
class _Stretch:
    """Equal lines old[start:end] == new[start + offset:end + offset] around a gap between spans."""

    start: int
    end: int
    offset: int


class _SpanMatcher(difflib.SequenceMatcher):
    """difflib's SequenceMatcher (autojunk and all, as unified_diff makes it) for two versions of a file
    that are the same outside known spans (None: not known, difflib's own search everywhere).

    The matching is difflib's own (get_matching_blocks: the longest match in a region first, then the
    regions either side of it), and so are the opcodes and their grouping. Only `find_longest_match` in a
    region of more than SMALL_REGION old lines is answered from the stretches of equal lines between the
    spans, each scored as difflib scores a match: its longest run of lines that are not autojunk's popular
    ones, the earliest on a tie (a match across stretches, which only a file repeating itself has, is not
    looked for there). Scanning every such region took the time: 3,000 hunks, 3,000 regions of up to
    12,000 lines."""

    SMALL_REGION = 64

    def __init__(self, old: list[str], new: list[str], spans: Spans):
        super().__init__(None, old, new)
        self.stretches = _stretches(spans, old, new) if spans is not None else []
        self.starts = [s.start for s in self.stretches]
        self.ends = [s.end for s in self.stretches]
        self.best_between = _RangeMin([self._best_run(s, s.start, s.end) for s in self.stretches])
        self.clipped: dict[tuple[int, int, int], tuple[int, int, int]] = {}

    def find_longest_match(self, alo=0, ahi=None, blo=0, bhi=None):
        ahi = len(self.a) if ahi is None else ahi
        bhi = len(self.b) if bhi is None else bhi
        if ahi - alo <= self.SMALL_REGION or not self.stretches:
            return super().find_longest_match(alo, ahi, blo, bhi)
        best = self._best_stretch(alo, ahi, blo, bhi)
        if best is None:
            return super().find_longest_match(alo, ahi, blo, bhi)
        size, start, offset = best
        return self._extended(start, start + offset, size, alo, ahi, blo, bhi)

    def _best_stretch(self, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int] | None:
        """(run length, first old line, offset) of the best run of the stretches in the region, or None."""
        first, last = bisect.bisect_right(self.ends, alo), bisect.bisect_left(self.starts, ahi)
        keys = []
        while first < last and self._clipped(first, alo, ahi, blo, bhi):
            keys.append(self._clipped_best(first, alo, ahi, blo, bhi))
            first += 1
        while last > first and self._clipped(last - 1, alo, ahi, blo, bhi):
            keys.append(self._clipped_best(last - 1, alo, ahi, blo, bhi))
            last -= 1
        if first < last:
            keys.append(self.best_between.min(first, last))
        best = min(keys, default=(0, 0, 0))
        if best[0] == 0:
            return None
        minus_size, end, end_b = best
        return -minus_size, end + minus_size + 1, end_b - end

    def _clipped(self, k: int, alo: int, ahi: int, blo: int, bhi: int) -> bool:
        s = self.stretches[k]
        return s.start < alo or s.start + s.offset < blo or s.end > ahi or s.end + s.offset > bhi

    def _clipped_best(self, k: int, alo: int, ahi: int, blo: int, bhi: int) -> tuple[int, int, int]:
        s = self.stretches[k]
        lo = max(s.start, alo, blo - s.offset)
        hi = min(s.end, ahi, bhi - s.offset)
        if (k, lo, hi) not in self.clipped:
            self.clipped[k, lo, hi] = self._best_run(s, lo, hi)
        return self.clipped[k, lo, hi]

    def _best_run(self, s: _Stretch, lo: int, hi: int) -> tuple[int, int, int]:
        """(-length, last old line, last new line) of the first longest run of lines in old[lo:hi] on the
        stretch's diagonal that difflib matches on (in b2j: not popular), as find_longest_match finds it."""
        best, run = (0, 0, 0), 0
        for i in range(lo, hi):
            run = run + 1 if self.a[i] in self.b2j else 0
            if run > -best[0]:
                best = (-run, i, i + s.offset)
        return best

    def _extended(self, i: int, j: int, size: int, alo: int, ahi: int, blo: int, bhi: int):
        """The match grown over equal lines either side, as find_longest_match grows its best (no line is
        junk here: unified_diff passes no isjunk)."""
        a, b = self.a, self.b
        while i > alo and j > blo and a[i - 1] == b[j - 1]:
            i, j, size = i - 1, j - 1, size + 1
        while i + size < ahi and j + size < bhi and a[i + size] == b[j + size]:
            size += 1
        return difflib.Match(i, j, size)


def _stretches(spans: list[Span], old: list[str], new: list[str]) -> list[_Stretch]:
    """The equal lines between spans (and before the first, after the last), each grown over equal lines
    on its diagonal into the spans beside it, no further than the next gap's far end."""
    edges = [Span(0, 0, 0, 0), *spans, Span(len(old), len(old), len(new), len(new))]
    gaps = [Span(p.old_end, n.old_start, p.new_end, n.new_start) for p, n in pairwise(edges)]
    out = []
    for k, g in enumerate(gaps):
        offset = g.new_start - g.old_start
        floor = max(gaps[k - 1].old_start, gaps[k - 1].new_start - offset) if k else max(0, -offset)
        ceiling = (min(gaps[k + 1].old_end, gaps[k + 1].new_end - offset) if k + 1 < len(gaps)
                   else min(len(old), len(new) - offset))
        start, end = g.old_start, g.old_end
        while start > floor and old[start - 1] == new[start - 1 + offset]:
            start -= 1
        while end < ceiling and old[end] == new[end + offset]:
            end += 1
        out.append(_Stretch(start, end, offset))
    return out


class _RangeMin:
    """The least of values[first:last], for any range, in constant time (a sparse table)."""

    def __init__(self, values: list):
        self.levels = [values]
        width = 1
        while 2 * width <= len(values):
            below = self.levels[-1]
            self.levels.append([min(below[i], below[i + width]) for i in range(len(below) - width)])
            width *= 2

    def min(self, first: int, last: int):
        level = (last - first).bit_length() - 1
        row = self.levels[level]
        return min(row[first], row[last - (1 << level)])


def _hunk_lines(group: list[tuple], old: list[str], new: list[str]) -> list[str]:
    """One hunk as difflib.unified_diff writes it."""
    first, last = group[0], group[-1]
    lines = [f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"]
    for tag, i1, i2, j1, j2 in group:
        if tag == "equal":
            lines += [" " + line for line in old[i1:i2]]
            continue
        lines += ["-" + line for line in old[i1:i2]]
        lines += ["+" + line for line in new[j1:j2]]
    return lines


def _range(start: int, stop: int) -> str:
    """A hunk header's range as difflib writes it: "5" for one line, "4,0" for none after line 4."""
    length = stop - start
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"
