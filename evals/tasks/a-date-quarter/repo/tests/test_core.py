from datetime import date, datetime, timedelta

import pytest

from datekit import (
    UK_ENGLAND,
    US_FEDERAL,
    DateError,
    HolidayCalendar,
    Recurrence,
    WorkingHours,
    add_business_days,
    add_months,
    fiscal_quarter,
    fiscal_year,
    parse_date,
    parse_duration,
    parse_relative,
    parse_rrule,
    quarter_end,
    quarter_of,
    quarter_start,
)
from datekit.core import (
    easter_sunday,
    format_duration,
    group_by_period,
    humanize_delta,
    month_grid,
    months_between,
    nth_weekday,
    period_bounds,
    previous_period,
    quarters_between,
    split_by_month,
)


def test_parse_date_forms():
    assert parse_date("2024-03-05") == date(2024, 3, 5)
    assert parse_date("20240305") == date(2024, 3, 5)
    assert parse_date("05/03/2024") == date(2024, 3, 5)
    assert parse_date("05/03/2024", dayfirst=False) == date(2024, 5, 3)
    assert parse_date("Mar 5th, 2024") == parse_date("5 March 2024") == date(2024, 3, 5)
    assert parse_date("2024-W10-2") == date(2024, 3, 5)
    assert parse_date("2024-065") == date(2024, 3, 5)
    with pytest.raises(DateError):
        parse_date("2024-02-30")


def test_durations():
    d = parse_duration("P1Y2M10DT2H30M")
    assert (d.years, d.months, d.days, d.seconds) == (1, 2, 10, 9000)
    assert format_duration(d) == "P1Y2M10DT2H30M"
    assert parse_duration("P3W").days == 21
    assert parse_duration("P1M").apply(date(2024, 1, 31)) == date(2024, 2, 29)
    with pytest.raises(DateError):
        parse_duration("P")
    assert humanize_delta(timedelta(days=-3)) == "3 days ago"
    assert humanize_delta(timedelta(hours=2, minutes=5), precision=2) == "in 2 hours, 5 minutes"


def test_relative_dates():
    today = date(2024, 5, 15)  # a Wednesday
    assert parse_relative("tomorrow", today) == date(2024, 5, 16)
    assert parse_relative("next friday", today) == date(2024, 5, 17)
    assert parse_relative("next wednesday", today) == date(2024, 5, 22)
    assert parse_relative("last monday", today) == date(2024, 5, 13)
    assert parse_relative("2 weeks ago", today) == date(2024, 5, 1)
    assert parse_relative("end of month", today) == date(2024, 5, 31)


def test_month_arithmetic():
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)
    assert add_months(date(2024, 3, 31), -13) == date(2023, 2, 28)
    assert months_between(date(2024, 1, 31), date(2024, 2, 29)) == 1
    assert months_between(date(2024, 1, 15), date(2024, 3, 14)) == 1
    assert split_by_month(date(2024, 1, 30), date(2024, 2, 2)) == [
        (date(2024, 1, 30), date(2024, 1, 31)), (date(2024, 2, 1), date(2024, 2, 2))]


def test_quarter_of_mid_quarter_months():
    assert quarter_of(date(2024, 1, 15)) == 1
    assert quarter_of(date(2024, 5, 1)) == 2
    assert quarter_of(date(2024, 8, 20)) == 3


def test_quarter_of_last_month_of_quarter():
    assert quarter_of(date(2024, 3, 31)) == 1
    assert quarter_of(date(2024, 6, 30)) == 2
    assert quarter_of(date(2024, 12, 1)) == 4


def test_quarter_bounds():
    assert quarter_start(date(2024, 3, 31)) == date(2024, 1, 1)
    assert quarter_end(date(2024, 12, 5)) == date(2024, 12, 31)
    assert quarters_between(date(2023, 11, 5), date(2024, 3, 1)) == ["2023-Q4", "2024-Q1"]


def test_period_helpers():
    assert period_bounds(date(2024, 5, 15), "month") == (date(2024, 5, 1), date(2024, 5, 31))
    assert previous_period(date(2024, 5, 15), "quarter") == (date(2024, 1, 1), date(2024, 3, 31))
    groups = group_by_period([date(2024, 9, 30), date(2024, 8, 1), date(2024, 10, 1)], "quarter")
    assert groups == {"2024-Q3": [date(2024, 8, 1), date(2024, 9, 30)], "2024-Q4": [date(2024, 10, 1)]}


def test_fiscal_year():
    assert fiscal_year(date(2023, 10, 1), start_month=10) == 2024
    assert fiscal_year(date(2024, 9, 30), start_month=10) == 2024
    assert fiscal_quarter(date(2023, 12, 31), start_month=10) == 1
    assert fiscal_quarter(date(2024, 4, 1), start_month=4) == 1


def test_nth_weekday_and_easter():
    assert nth_weekday(2024, 11, 3, 4) == date(2024, 11, 28)
    assert nth_weekday(2024, 5, 0, -1) == date(2024, 5, 27)
    assert easter_sunday(2024) == date(2024, 3, 31)
    assert easter_sunday(2025) == date(2025, 4, 20)


def test_business_days():
    us = HolidayCalendar(rules=US_FEDERAL)
    assert us.holiday_name(date(2026, 7, 3)) == "Independence Day"  # July 4th 2026 is a Saturday
    assert us.add_business_days(date(2024, 11, 27), 1) == date(2024, 11, 29)
    assert add_business_days(date(2024, 5, 17), 1) == date(2024, 5, 20)
    assert us.business_days_between(date(2024, 12, 23), date(2024, 12, 27)) == 3
    uk = HolidayCalendar(rules=UK_ENGLAND)
    assert not uk.is_business_day(date(2024, 4, 1))  # Easter Monday


def test_recurrences():
    weekly = Recurrence(date(2024, 5, 1), "WEEKLY", byweekday=(0, 2), count=4)
    assert weekly.all() == [date(2024, 5, 1), date(2024, 5, 6), date(2024, 5, 8), date(2024, 5, 13)]
    monthly = Recurrence(date(2024, 1, 31), "MONTHLY", count=3)
    assert monthly.all() == [date(2024, 1, 31), date(2024, 3, 31), date(2024, 5, 31)]
    last_day = parse_rrule("FREQ=MONTHLY;BYMONTHDAY=-1;COUNT=2", date(2024, 2, 1))
    assert last_day.all() == [date(2024, 2, 29), date(2024, 3, 31)]
    with pytest.raises(DateError):
        Recurrence(date(2024, 1, 1), "DAILY").all()


def test_working_hours():
    hours = WorkingHours(9, 17)
    friday_4pm = datetime(2024, 5, 17, 16, 0)
    assert hours.add_working_time(friday_4pm, timedelta(hours=2)) == datetime(2024, 5, 20, 10, 0)
    assert hours.working_time_between(friday_4pm, datetime(2024, 5, 20, 10, 0)) == timedelta(hours=2)


def test_month_grid():
    grid = month_grid(2024, 2)
    assert grid[0][:3] == [None, None, None] and grid[0][3] == date(2024, 2, 1)
    assert grid[-1][3] == date(2024, 2, 29)
