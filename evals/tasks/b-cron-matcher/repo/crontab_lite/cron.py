"""Classic five-field cron expressions: parse them, match datetimes, find the next and previous runs.

    ┌──────── minute        0-59
    │ ┌────── hour          0-23
    │ │ ┌──── day of month  1-31
    │ │ │ ┌── month         1-12 or JAN-DEC
    │ │ │ │ ┌ day of week   0-7 or SUN-SAT (0 and 7 are both Sunday)
    * * * * *

Each field is a comma-separated list of ``*``, ``N``, ``A-B``, each optionally followed by ``/STEP``;
``N/STEP`` means ``N-max/STEP``. Like Vixie cron, when both day of month and day of week are restricted
(neither is ``*``), a day matches if EITHER matches.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Iterator

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

MONTH_NAMES = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
DAY_NAMES = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]

# Give up searching for a next/previous run after this many years (e.g. "0 0 30 2 *" never fires).
SEARCH_YEARS = 8


class CronError(ValueError):
    """A malformed cron expression."""


@dataclass(frozen=True)
class Field:
    name: str
    low: int
    high: int
    names: tuple[str, ...] = ()
    names_start: int = 0

    def value(self, text: str) -> int:
        """One number or name of this field as an int, range-checked."""
        upper = text.upper()
        if upper in self.names:
            return self.names.index(upper) + self.names_start
        if not text.isdigit():
            raise CronError(f"{self.name}: {text!r} is not a number")
        number = int(text)
        if not self.low <= number <= self.high:
            raise CronError(f"{self.name}: {number} is outside {self.low}-{self.high}")
        return number


FIELDS = (
    Field("minute", 0, 59),
    Field("hour", 0, 23),
    Field("day of month", 1, 31),
    Field("month", 1, 12, tuple(MONTH_NAMES), 1),
    Field("day of week", 0, 7, tuple(DAY_NAMES), 0),
)


def _parse_part(part: str, field: Field) -> set[int]:
    """One comma-separated item of a field: '*', 'N', 'A-B', each with an optional '/STEP'."""
    base, slash, step_text = part.partition("/")
    step = 1
    if slash:
        if not step_text.isdigit() or int(step_text) == 0:
            raise CronError(f"{field.name}: bad step {step_text!r}")
        step = int(step_text)
    if base == "*":
        start, end = field.low, field.high
    elif "-" in base:
        low_text, _, high_text = base.partition("-")
        start, end = field.value(low_text), field.value(low_text)
        if start > end:
            raise CronError(f"{field.name}: range {base!r} runs backwards")
    else:
        start = field.value(base)
        end = field.high if slash else start
    return set(range(start, end + 1, step))


def _parse_field(text: str, field: Field) -> frozenset[int]:
    if not text:
        raise CronError(f"{field.name}: empty field")
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"{field.name}: empty list item in {text!r}")
        values |= _parse_part(part, field)
    return frozenset(values)


def _cron_weekday(moment: dt.date) -> int:
    """Cron numbers Sunday as 0; Python numbers Monday as 0."""
    return (moment.weekday() + 1) % 7


@dataclass(frozen=True)
class CronExpression:
    """A parsed expression. Build one with `parse`."""

    source: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    days_restricted: bool
    weekdays_restricted: bool

    def day_matches(self, day: dt.date) -> bool:
        """Whether the day-of-month / day-of-week part matches `day` (Vixie cron's OR rule)."""
        in_days = day.day in self.days
        in_weekdays = _cron_weekday(day) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return in_days or in_weekdays
        return in_days and in_weekdays

    def matches(self, moment: dt.datetime) -> bool:
        """Whether the job runs in the minute containing `moment`."""
        return (
            moment.minute in self.minutes
            and moment.hour in self.hours
            and moment.month in self.months
            and self.day_matches(moment.date())
        )

    def next_after(self, moment: dt.datetime) -> dt.datetime:
        """The first run strictly after `moment` (seconds dropped; tzinfo kept)."""
        candidate = moment.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        limit = candidate.year + SEARCH_YEARS
        while candidate.year <= limit:
            if candidate.month not in self.months:
                year, month = divmod(candidate.month, 12)
                candidate = candidate.replace(year=candidate.year + year, month=month + 1, day=1, hour=0, minute=0)
            elif not self.day_matches(candidate.date()):
                candidate = (candidate + dt.timedelta(days=1)).replace(hour=0, minute=0)
            elif candidate.hour not in self.hours:
                candidate = (candidate + dt.timedelta(hours=1)).replace(minute=0)
            elif candidate.minute not in self.minutes:
                candidate += dt.timedelta(minutes=1)
            else:
                return candidate
        raise CronError(f"{self.source!r} never fires within {SEARCH_YEARS} years")

    def previous_before(self, moment: dt.datetime) -> dt.datetime:
        """The last run strictly before `moment`."""
        candidate = moment.replace(second=0, microsecond=0)
        if candidate == moment:
            candidate -= dt.timedelta(minutes=1)
        limit = candidate.year - SEARCH_YEARS
        while candidate.year >= limit:
            if candidate.month not in self.months:
                first = candidate.replace(day=1, hour=23, minute=59)
                candidate = first - dt.timedelta(days=1)
            elif not self.day_matches(candidate.date()):
                candidate = candidate.replace(hour=23, minute=59) - dt.timedelta(days=1)
            elif candidate.hour not in self.hours:
                candidate = candidate.replace(minute=59) - dt.timedelta(hours=1)
            elif candidate.minute not in self.minutes:
                candidate -= dt.timedelta(minutes=1)
            else:
                return candidate
        raise CronError(f"{self.source!r} never fired within {SEARCH_YEARS} years")

    def iter_after(self, moment: dt.datetime) -> Iterator[dt.datetime]:
        """Every run after `moment`, in order (an endless iterator)."""
        while True:
            moment = self.next_after(moment)
            yield moment

    def runs_between(self, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
        """Runs in the half-open interval [start, end)."""
        runs = []
        moment = start - dt.timedelta(minutes=1)
        while True:
            moment = self.next_after(moment)
            if moment >= end:
                return runs
            if moment >= start:
                runs.append(moment)


def parse(expression: str) -> CronExpression:
    """Parse a five-field expression or an alias such as '@daily'."""
    source = expression.strip()
    text = ALIASES.get(source.lower(), source)
    parts = text.split()
    if len(parts) != 5:
        raise CronError(f"expected 5 fields, got {len(parts)} in {expression!r}")
    minutes, hours, days, months, weekdays = (_parse_field(p, f) for p, f in zip(parts, FIELDS))
    if 7 in weekdays:
        weekdays = (weekdays - {7}) | {0}
    return CronExpression(
        source=source,
        minutes=minutes,
        hours=hours,
        days=days,
        months=months,
        weekdays=weekdays,
        days_restricted=not parts[2].startswith("*"),
        weekdays_restricted=not parts[4].startswith("*"),
    )
