from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from icsread import Attendee, ParseError, read_calendar

SAMPLE = (Path(__file__).parent / "sample.ics").read_text()


@pytest.fixture(scope="module")
def calendar():
    return read_calendar(SAMPLE)


def test_calendar_header(calendar):
    assert calendar.prodid == "-//Example Corp//Planner 4.2//EN"
    assert calendar.name == "Team, Ops"
    assert [e.uid for e in calendar.events] == ["standup-1@example.com", "review-7@example.com",
                                                "holiday-3@example.com"]


def test_recurring_event(calendar):
    standup = calendar.event("standup-1@example.com")
    assert standup.start == datetime(2024, 1, 8, 9, 30) and standup.tzid == "Europe/Berlin"
    assert standup.duration == timedelta(minutes=15)
    assert standup.rrule == {"FREQ": "WEEKLY", "BYDAY": "MO,TU,WE,TH,FR"}
    assert standup.exdates == [datetime(2024, 1, 10, 9, 30), datetime(2024, 1, 11, 9, 30)]
    assert standup.categories == ["meeting", "team,ops"]
    assert standup.organizer == Attendee("lead@example.com", "Ops Lead")
    assert standup.attendee("KIM@example.com").status == "ACCEPTED"


def test_event_text_fields(calendar):
    review = calendar.event("review-7@example.com")
    assert review.summary == "Quarterly review; budget"
    assert review.description == "Agenda:\n1. numbers\n2. hiring, contractors"
    assert review.start == datetime(2024, 1, 12, 14, tzinfo=timezone.utc)
    assert review.duration == timedelta(minutes=90)


def test_attendees_with_quoted_names(calendar):
    review = calendar.event("review-7@example.com")
    assert review.organizer == Attendee("platform@example.com", "Ops: Platform Team")
    assert [a.email for a in review.attendees] == ["jane@example.com", "bo@example.com", "sam@example.com"]
    jane, bo, sam = review.attendees
    assert (jane.name, jane.role, jane.status) == ("Doe, Jane", "CHAIR", "ACCEPTED")
    assert bo.name == "Smith, Bo" and bo.rsvp
    assert bo.delegated_from == ("a@example.com", "b@example.com")
    assert sam.name is None and sam.role == "OPT-PARTICIPANT"


def test_alarm(calendar):
    (alarm,) = calendar.event("review-7@example.com").alarms
    assert alarm.trigger == timedelta(minutes=-10) and alarm.description == "Review in 10 minutes"
    assert not alarm.related_to_end


def test_all_day_event_lasts_a_day(calendar):
    holiday = calendar.event("holiday-3@example.com")
    assert holiday.all_day and holiday.start == date(2024, 1, 1) and holiday.end == date(2024, 1, 2)
    assert [e.uid for e in calendar.between(date(2024, 1, 1), date(2024, 1, 2))] == ["holiday-3@example.com"]


@pytest.mark.parametrize("text,message", [
    ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:1\nEND:VCALENDAR\n", "VEVENT is open"),
    ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:1\nEND:VEVENT\n", "never closed"),
    ("BEGIN:VCALENDAR\nBEGIN:VEVENT\nUID:1\nEND:VEVENT\nEND:VCALENDAR\n", "needs UID and DTSTART"),
    ("UID:1\n", "outside any component"),
])
def test_structural_errors(text, message):
    with pytest.raises(ParseError, match=message):
        read_calendar(text)


def test_error_names_the_line():
    with pytest.raises(ParseError, match="line 3"):
        read_calendar("BEGIN:VCALENDAR\nVERSION:2.0\nbroken line\nEND:VCALENDAR\n")
