from datetime import datetime, timedelta

from dailyjobs import BERLIN, LONDON, UTC
from dailyjobs.tz import last_sunday


def test_last_sundays_2024():
    assert last_sunday(2024, 3) == datetime(2024, 3, 31)
    assert last_sunday(2024, 10) == datetime(2024, 10, 27)
    assert last_sunday(2024, 12) == datetime(2024, 12, 29)


def test_offsets_winter_and_summer():
    assert datetime(2024, 1, 10, 12, tzinfo=BERLIN).utcoffset() == timedelta(hours=1)
    assert datetime(2024, 7, 10, 12, tzinfo=BERLIN).utcoffset() == timedelta(hours=2)
    assert datetime(2024, 7, 10, 12, tzinfo=LONDON).tzname() == "BST"


def test_from_utc_across_the_autumn_change():
    first = datetime(2024, 10, 27, 0, 30, tzinfo=UTC).astimezone(BERLIN)
    second = datetime(2024, 10, 27, 1, 30, tzinfo=UTC).astimezone(BERLIN)
    assert (first.hour, first.minute, first.fold, first.tzname()) == (2, 30, 0, "CEST")
    assert (second.hour, second.minute, second.fold, second.tzname()) == (2, 30, 1, "CET")


def test_from_utc_across_the_spring_change():
    before = datetime(2024, 3, 31, 0, 59, tzinfo=UTC).astimezone(BERLIN)
    after = datetime(2024, 3, 31, 1, 0, tzinfo=UTC).astimezone(BERLIN)
    assert (before.hour, before.minute) == (1, 59)
    assert (after.hour, after.minute) == (3, 0)
