"""Closed numeric intervals [start, end] and set operations on lists of them.

Used for booking calendars and time-series coverage: every function accepts intervals in any order and
returns a sorted, non-overlapping ("normalized") list unless said otherwise. Intervals are closed, so
[1, 3] and [3, 5] share the point 3 and belong together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator


@dataclass(frozen=True, order=True)
class Interval:
    """A closed interval; `start` may equal `end` (a single point)."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if self.start > self.end:
            raise ValueError(f"interval start {self.start} is after its end {self.end}")

    @classmethod
    def of(cls, value: Interval | tuple[float, float]) -> Interval:
        """Accept an Interval or a (start, end) pair."""
        if isinstance(value, Interval):
            return value
        try:
            start, end = value
        except (TypeError, ValueError):
            raise TypeError(f"expected an Interval or a (start, end) pair, got {value!r}") from None
        return cls(start, end)

    @property
    def length(self) -> float:
        return self.end - self.start

    def contains(self, point: float) -> bool:
        return self.start <= point <= self.end

    def overlaps(self, other: Interval) -> bool:
        """True when the two intervals share at least one point."""
        return self.start <= other.end and other.start <= self.end

    def intersection(self, other: Interval) -> Interval | None:
        if not self.overlaps(other):
            return None
        return Interval(max(self.start, other.start), min(self.end, other.end))

    def shift(self, offset: float) -> Interval:
        return Interval(self.start + offset, self.end + offset)

    def __str__(self) -> str:
        return f"[{self.start}, {self.end}]"


def _normalize_input(intervals: Iterable) -> list[Interval]:
    return sorted(Interval.of(item) for item in intervals)


def merge(intervals: Iterable) -> list[Interval]:
    """Union of `intervals` as a sorted list of disjoint intervals.

    Overlapping and touching intervals are combined: [1, 3] + [2, 4] -> [1, 4], [1, 3] + [3, 5] -> [1, 5].
    """
    merged: list[Interval] = []
    for current in _normalize_input(intervals):
        if merged and current.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Interval(last.start, max(last.end, current.end))
        else:
            merged.append(current)
    return merged


def total_length(intervals: Iterable) -> float:
    """Length of the union, counting shared stretches once."""
    return sum(interval.length for interval in merge(intervals))


def intersect(left: Iterable, right: Iterable) -> list[Interval]:
    """Points that lie in both collections, as a normalized list."""
    a, b = merge(left), merge(right)
    result: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        common = a[i].intersection(b[j])
        if common is not None:
            result.append(common)
        # Advance whichever interval finishes first; it cannot meet anything further on the other side.
        if a[i].end < b[j].end:
            i += 1
        else:
            j += 1
    return merge(result)


def subtract(base: Iterable, removed: Iterable) -> list[Interval]:
    """Parts of `base` not covered by `removed`.

    Because intervals are closed, the cut points themselves are removed too in real-number terms; we keep
    the boundary points so bookings that end exactly when a blocked slot starts stay representable.
    """
    remaining = merge(base)
    for cut in merge(removed):
        pieces: list[Interval] = []
        for interval in remaining:
            if not interval.overlaps(cut):
                pieces.append(interval)
                continue
            if interval.start < cut.start:
                pieces.append(Interval(interval.start, cut.start))
            if cut.end < interval.end:
                pieces.append(Interval(cut.end, interval.end))
        remaining = pieces
    return remaining


def gaps(intervals: Iterable, within: Interval | tuple[float, float] | None = None) -> list[Interval]:
    """Uncovered stretches between the intervals, optionally clipped to the `within` window.

    Without `within`, only the gaps between the first start and the last end are returned.
    """
    merged = merge(intervals)
    if within is not None:
        window = Interval.of(within)
        merged = [piece for piece in (iv.intersection(window) for iv in merged) if piece is not None]
        if not merged:
            return [window]
        bounds = [Interval(window.start, window.start)] + merged + [Interval(window.end, window.end)]
    else:
        bounds = merged
    result = []
    for before, after in zip(bounds, bounds[1:]):
        if before.end < after.start:
            result.append(Interval(before.end, after.start))
    return result


def covers(intervals: Iterable, target: Interval | tuple[float, float]) -> bool:
    """True when the union of `intervals` contains all of `target`."""
    wanted = Interval.of(target)
    return any(iv.start <= wanted.start and wanted.end <= iv.end for iv in merge(intervals))


def overlapping(intervals: Iterable, probe: Interval | tuple[float, float]) -> Iterator[Interval]:
    """The input intervals (not merged) that share a point with `probe`, in sorted order."""
    target = Interval.of(probe)
    for interval in _normalize_input(intervals):
        if interval.start > target.end:
            break
        if interval.overlaps(target):
            yield interval


def pairwise_conflicts(intervals: Iterable) -> list[tuple[Interval, Interval]]:
    """Every pair of input intervals that overlap by more than a single shared endpoint.

    Back-to-back bookings ([9, 10] and [10, 11]) are not conflicts; [9, 10.5] and [10, 11] are.
    """
    ordered = _normalize_input(intervals)
    conflicts = []
    for index, first in enumerate(ordered):
        for second in ordered[index + 1:]:
            if second.start >= first.end:
                break
            conflicts.append((first, second))
    return conflicts


def span(intervals: Iterable) -> Interval | None:
    """The smallest interval containing all of `intervals`, or None for an empty input."""
    items = _normalize_input(intervals)
    if not items:
        return None
    return Interval(items[0].start, max(iv.end for iv in items))


def clip(intervals: Iterable, window: Interval | tuple[float, float]) -> list[Interval]:
    """The union of `intervals` cut down to `window`."""
    bounds = Interval.of(window)
    return [piece for piece in (iv.intersection(bounds) for iv in merge(intervals)) if piece is not None]


def coverage(intervals: Iterable, window: Interval | tuple[float, float]) -> float:
    """Fraction of `window` covered by `intervals` (0.0 to 1.0); a zero-length window counts as covered
    when its point is inside an interval."""
    bounds = Interval.of(window)
    pieces = clip(intervals, bounds)
    if bounds.length == 0:
        return 1.0 if pieces else 0.0
    return sum(piece.length for piece in pieces) / bounds.length
