import pytest

from spans import Interval, covers, gaps, intersect, merge, overlapping, subtract, total_length
from spans.intervals import clip, coverage, pairwise_conflicts, span


def iv(*pairs):
    return [Interval(a, b) for a, b in pairs]


def test_interval_validation():
    with pytest.raises(ValueError):
        Interval(5, 1)
    with pytest.raises(TypeError):
        Interval.of("nope")


def test_merge_overlapping():
    assert merge([(5, 8), (1, 3), (2, 4)]) == iv((1, 4), (5, 8))


def test_merge_touching_intervals():
    assert merge([(1, 3), (3, 5)]) == iv((1, 5))
    assert merge([(0, 0), (0, 2), (7, 9), (2, 7)]) == iv((0, 9))


def test_merge_contained():
    assert merge([(1, 10), (2, 3)]) == iv((1, 10))


def test_total_length():
    assert total_length([(0, 2), (1, 4), (10, 11)]) == 5


def test_intersect():
    assert intersect([(0, 5), (8, 12)], [(3, 9)]) == iv((3, 5), (8, 9))


def test_subtract():
    assert subtract([(0, 10)], [(2, 3), (5, 6)]) == iv((0, 2), (3, 5), (6, 10))


def test_gaps_within_window():
    assert gaps([(2, 3), (5, 6)], within=(0, 10)) == iv((0, 2), (3, 5), (6, 10))


def test_no_gap_between_back_to_back_bookings():
    assert gaps([(9, 10), (10, 11), (13, 14)]) == iv((11, 13))


def test_covers_across_touching_intervals():
    assert covers([(9, 12), (12, 17)], (10, 16))
    assert not covers([(9, 12), (13, 17)], (10, 16))


def test_overlapping():
    assert list(overlapping([(0, 1), (2, 3), (4, 5)], (1, 2))) == iv((0, 1), (2, 3))


def test_pairwise_conflicts_ignore_shared_endpoint():
    assert pairwise_conflicts([(9, 10), (10, 11)]) == []
    assert pairwise_conflicts([(9, 10.5), (10, 11)]) == [(Interval(9, 10.5), Interval(10, 11))]


def test_span_clip_coverage():
    assert span([(4, 6), (1, 2)]) == Interval(1, 6)
    assert span([]) is None
    assert clip([(0, 3), (5, 9)], (2, 6)) == iv((2, 3), (5, 6))
    assert coverage([(0, 5)], (0, 10)) == 0.5
