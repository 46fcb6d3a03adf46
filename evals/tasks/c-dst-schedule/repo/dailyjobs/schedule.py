"""Jobs that run at a wall-clock time of day in a given zone, e.g. "09:30 mon-fri" in Berlin.

A job keeps its local time across summer-time changes: a 09:00 job runs at 08:00 UTC in summer and at
09:00 UTC in winter. All instants going in and out are aware datetimes; results are in UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Iterator

from dailyjobs.tz import UTC

DAY = timedelta(days=1)
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SCHEDULE = re.compile(r"^(?P<hour>\d{1,2}):(?P<minute>\d{2})(?:\s+(?P<days>[a-z,\-]+))?$")


def _require_aware(value: datetime, name: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be timezone-aware, got {value!r}")


def parse_weekdays(spec: str) -> frozenset[int]:
    """'mon-fri' -> {0..4}; 'sat,sun' -> {5, 6}; ranges may wrap: 'fri-mon' -> {4, 5, 6, 0}."""
    days: set[int] = set()
    for part in spec.split(","):
        if "-" in part:
            first, _, last = part.partition("-")
            a, b = WEEKDAYS.index(first), WEEKDAYS.index(last)
            span = range(a, b + 1) if a <= b else [*range(a, 7), *range(0, b + 1)]
            days.update(span)
        elif part in WEEKDAYS:
            days.add(WEEKDAYS.index(part))
        else:
            raise ValueError(f"unknown weekday {part!r}")
    return frozenset(days)


@dataclass(frozen=True)
class DailyJob:
    """Run `name` at local time `at` in `zone` on `weekdays` (0 = Monday), skipping `skip_dates`."""

    name: str
    at: time
    zone: tzinfo
    weekdays: frozenset[int] = frozenset(range(7))
    skip_dates: frozenset[date] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not self.weekdays:
            raise ValueError("a job needs at least one weekday")
        if not all(0 <= d <= 6 for d in self.weekdays):
            raise ValueError(f"weekdays must be 0..6, got {sorted(self.weekdays)}")
        if self.at.tzinfo is not None:
            raise ValueError("`at` is a wall-clock time; give the zone separately")

    def runs_on(self, day: date) -> bool:
        return day.weekday() in self.weekdays and day not in self.skip_dates

    def run_at(self, day: date) -> datetime:
        """The UTC instant of the run on local date `day` (whether or not the job runs that day)."""
        local = datetime.combine(day, self.at, tzinfo=self.zone)
        return local.astimezone(UTC)

    def next_run(self, after: datetime) -> datetime:
        """The first run strictly after `after` (aware), in UTC."""
        _require_aware(after, "after")
        run = self.run_at(after.astimezone(self.zone).date())
        while not self.runs_on(run.astimezone(self.zone).date()) or run <= after:
            run += DAY
        return run

    def runs_between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Runs in the half-open interval [start, end), in UTC."""
        _require_aware(start, "start")
        _require_aware(end, "end")
        if end < start:
            raise ValueError("end is before start")
        run = self.run_at(start.astimezone(self.zone).date())
        while run < end:
            if run >= start and self.runs_on(run.astimezone(self.zone).date()):
                yield run
            run += DAY

    def previous_run(self, before: datetime) -> datetime:
        """The last run strictly before `before` (aware), in UTC."""
        _require_aware(before, "before")
        day = before.astimezone(self.zone).date()
        while not self.runs_on(day) or self.run_at(day) >= before:
            day -= DAY
        return self.run_at(day)

    def describe(self) -> str:
        if self.weekdays == frozenset(range(7)):
            days = "daily"
        else:
            days = ",".join(WEEKDAYS[d] for d in sorted(self.weekdays))
        return f"{self.name}: {self.at:%H:%M} {days} ({getattr(self.zone, 'name', self.zone)})"


def parse_schedule(name: str, spec: str, zone: tzinfo, skip: tuple[date, ...] = ()) -> DailyJob:
    """'09:30' (every day) or '09:30 mon-fri' or '22:00 sat,sun' -> DailyJob."""
    match = _SCHEDULE.match(spec.strip().lower())
    if not match:
        raise ValueError(f"bad schedule {spec!r}; expected 'HH:MM [days]'")
    hour, minute = int(match["hour"]), int(match["minute"])
    if hour > 23 or minute > 59:
        raise ValueError(f"bad time of day in {spec!r}")
    days = parse_weekdays(match["days"]) if match["days"] else frozenset(range(7))
    return DailyJob(name, time(hour, minute), zone, days, frozenset(skip))
