from datetime import date, datetime, time

import pytest

from dailyjobs import BERLIN, HELSINKI, UTC, DailyJob, parse_schedule


def local(run, zone=BERLIN):
    return run.astimezone(zone).replace(tzinfo=None)


def test_next_run_later_today_and_tomorrow():
    job = DailyJob("report", time(9, 0), BERLIN)
    assert job.next_run(datetime(2024, 1, 15, 6, 0, tzinfo=UTC)) == datetime(2024, 1, 15, 8, 0, tzinfo=UTC)
    assert job.next_run(datetime(2024, 1, 15, 8, 0, tzinfo=UTC)) == datetime(2024, 1, 16, 8, 0, tzinfo=UTC)


def test_next_run_in_summer_is_an_hour_earlier_in_utc():
    job = DailyJob("report", time(9, 0), BERLIN)
    assert job.next_run(datetime(2024, 7, 1, 0, 0, tzinfo=UTC)) == datetime(2024, 7, 1, 7, 0, tzinfo=UTC)


def test_next_run_over_the_autumn_change_keeps_local_time():
    job = DailyJob("report", time(9, 0), BERLIN)
    run = job.next_run(datetime(2024, 10, 26, 8, 0, tzinfo=UTC))  # Saturday 10:00 CEST, after the run
    assert local(run) == datetime(2024, 10, 27, 9, 0)
    assert run == datetime(2024, 10, 27, 8, 0, tzinfo=UTC)


def test_weekday_job_over_the_spring_weekend():
    job = parse_schedule("standup", "09:30 mon-fri", BERLIN)
    run = job.next_run(datetime(2024, 3, 29, 12, 0, tzinfo=UTC))  # Friday afternoon, before the change
    assert local(run) == datetime(2024, 4, 1, 9, 30)


def test_runs_between_over_the_autumn_change():
    job = DailyJob("backup", time(9, 0), BERLIN)
    runs = list(job.runs_between(datetime(2024, 10, 25, tzinfo=UTC), datetime(2024, 10, 30, tzinfo=UTC)))
    assert [local(r) for r in runs] == [datetime(2024, 10, d, 9, 0) for d in (25, 26, 27, 28, 29)]


def test_runs_between_a_summer_week():
    job = DailyJob("backup", time(23, 30), HELSINKI)
    runs = list(job.runs_between(datetime(2024, 6, 3, tzinfo=UTC), datetime(2024, 6, 6, tzinfo=UTC)))
    assert [local(r, HELSINKI) for r in runs] == [datetime(2024, 6, d, 23, 30) for d in (3, 4, 5)]


def test_runs_between_is_half_open():
    job = DailyJob("backup", time(1, 0), UTC)
    runs = list(job.runs_between(datetime(2024, 1, 1, 1, tzinfo=UTC), datetime(2024, 1, 3, 1, tzinfo=UTC)))
    assert runs == [datetime(2024, 1, 1, 1, tzinfo=UTC), datetime(2024, 1, 2, 1, tzinfo=UTC)]


def test_skip_dates_and_previous_run():
    job = parse_schedule("payroll", "18:00 mon-fri", BERLIN, skip=(date(2024, 12, 25),))
    run = job.next_run(datetime(2024, 12, 24, 18, 0, tzinfo=UTC))
    assert local(run) == datetime(2024, 12, 26, 18, 0)
    assert local(job.previous_run(datetime(2024, 12, 30, 12, 0, tzinfo=UTC))) == datetime(2024, 12, 27, 18, 0)


def test_parse_schedule_and_describe():
    assert parse_schedule("x", "7:05 fri-mon", BERLIN).weekdays == frozenset({4, 5, 6, 0})
    assert parse_schedule("x", "07:05", BERLIN).describe() == "x: 07:05 daily (Europe/Berlin)"
    assert parse_schedule("x", "07:05 sat,sun", BERLIN).describe() == "x: 07:05 sat,sun (Europe/Berlin)"


@pytest.mark.parametrize("spec", ["25:00", "9", "09:61", "09:00 funday"])
def test_bad_schedules(spec):
    with pytest.raises(ValueError):
        parse_schedule("x", spec, BERLIN)


def test_naive_datetimes_are_rejected():
    with pytest.raises(ValueError):
        DailyJob("x", time(9), BERLIN).next_run(datetime(2024, 1, 1))
