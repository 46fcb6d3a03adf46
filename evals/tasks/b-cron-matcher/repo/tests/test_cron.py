import datetime as dt

import pytest

from crontab_lite import CronError, parse

D = dt.datetime


def test_every_minute_matches_anything():
    assert parse("* * * * *").matches(D(2024, 2, 29, 13, 37))


def test_single_values_and_names():
    expr = parse("30 4 1 JAN mon")
    assert expr.months == {1} and expr.weekdays == {1}
    assert expr.matches(D(2024, 1, 1, 4, 30))  # the 1st, a Monday
    assert expr.matches(D(2024, 1, 8, 4, 30))  # not the 1st, but a Monday: OR rule
    assert not expr.matches(D(2024, 1, 9, 4, 30))


def test_steps_on_star_and_start():
    assert parse("*/15 * * * *").minutes == {0, 15, 30, 45}
    assert parse("5/20 * * * *").minutes == {5, 25, 45}


def test_hour_range():
    expr = parse("0 9-17 * * *")
    assert expr.hours == set(range(9, 18))
    assert expr.matches(D(2024, 5, 6, 17, 0))


def test_range_with_step_and_list():
    assert parse("0 0 * * *").hours == {0}
    assert parse("10-30/10,59 * * * *").minutes == {10, 20, 30, 59}


def test_sunday_is_zero_or_seven():
    assert parse("0 0 * * 7").weekdays == {0}
    assert parse("0 0 * * SUN").matches(D(2024, 6, 2))


def test_aliases():
    assert parse("@hourly").minutes == {0}
    assert parse("@weekly").matches(D(2024, 6, 2, 0, 0))


@pytest.mark.parametrize("bad", ["* * * *", "60 * * * *", "* * 0 * *", "*/0 * * * *", "a * * * *", "1,,2 * * * *"])
def test_malformed(bad):
    with pytest.raises(CronError):
        parse(bad)


def test_backwards_range_is_rejected():
    with pytest.raises(CronError):
        parse("0 17-9 * * *")


def test_next_after_rolls_over_month_and_year():
    expr = parse("0 0 1 * *")
    assert expr.next_after(D(2024, 12, 15, 8, 0)) == D(2025, 1, 1)
    assert expr.next_after(D(2024, 1, 1, 0, 0)) == D(2024, 2, 1)


def test_next_after_business_hours():
    expr = parse("30 9-17 * * MON-FRI")
    assert expr.next_after(D(2024, 6, 7, 12, 5)) == D(2024, 6, 7, 12, 30)
    assert expr.next_after(D(2024, 6, 7, 17, 45)) == D(2024, 6, 10, 9, 30)  # Friday evening -> Monday


def test_previous_before():
    expr = parse("0 12 * * *")
    assert expr.previous_before(D(2024, 3, 1, 11, 0)) == D(2024, 2, 29, 12, 0)
    assert expr.previous_before(D(2024, 3, 1, 12, 0)) == D(2024, 2, 29, 12, 0)


def test_never_fires():
    with pytest.raises(CronError):
        parse("0 0 30 2 *").next_after(D(2024, 1, 1))


def test_runs_between():
    expr = parse("0 */6 * * *")
    runs = expr.runs_between(D(2024, 1, 1), D(2024, 1, 2))
    assert [r.hour for r in runs] == [0, 6, 12, 18]
