"""What a calendar reads into: plain dataclasses, no parsing logic."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone


@dataclass(frozen=True)
class Attendee:
    email: str
    name: str | None = None
    role: str = "REQ-PARTICIPANT"
    status: str = "NEEDS-ACTION"
    rsvp: bool = False
    delegated_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class Alarm:
    action: str
    trigger: timedelta | datetime
    description: str | None = None
    related_to_end: bool = False


@dataclass
class Event:
    uid: str
    start: date | datetime
    end: date | datetime | None = None
    summary: str = ""
    description: str = ""
    location: str = ""
    status: str = "CONFIRMED"
    tzid: str | None = None
    organizer: Attendee | None = None
    attendees: list[Attendee] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    rrule: dict[str, str] = field(default_factory=dict)
    exdates: list[date | datetime] = field(default_factory=list)
    alarms: list[Alarm] = field(default_factory=list)
    url: str | None = None

    @property
    def all_day(self) -> bool:
        return not isinstance(self.start, datetime)

    @property
    def duration(self) -> timedelta | None:
        if self.end is None:
            return None
        return self.end - self.start

    def attendee(self, email: str) -> Attendee | None:
        email = email.lower()
        return next((a for a in self.attendees if a.email.lower() == email), None)


@dataclass
class Calendar:
    prodid: str = ""
    version: str = "2.0"
    name: str | None = None
    events: list[Event] = field(default_factory=list)

    def event(self, uid: str) -> Event:
        for event in self.events:
            if event.uid == uid:
                return event
        raise KeyError(uid)

    def between(self, start: date | datetime, end: date | datetime) -> list[Event]:
        """Events whose start falls in [start, end) (recurrences are not expanded)."""
        low, high = _comparable(start), _comparable(end)
        found = [e for e in self.events if low <= _comparable(e.start) < high]
        return sorted(found, key=lambda e: _comparable(e.start))


def _comparable(value: date | datetime) -> datetime:
    """Dates as midnight and aware times as naive UTC, so all-day, floating and UTC events sort together."""
    if not isinstance(value, datetime):
        return datetime(value.year, value.month, value.day)
    if value.tzinfo is not None:
        return value.astimezone(timezone.utc).replace(tzinfo=None)
    return value
