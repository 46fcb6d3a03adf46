"""Calendar arithmetic for reporting and scheduling code.

Everything here works on `datetime.date` (and `datetime.datetime` where noted) from the standard library;
nothing depends on the local time zone. The module groups into:

- parsing and formatting: `parse_date`, `parse_duration`, `format_duration`, `humanize_delta`
- calendar arithmetic: months, quarters, weeks, fiscal years (`add_months`, `quarter_of`, `iso_week`, ...)
- ranges: `date_range`, `month_range`, `months_between`, `age`
- business days: `HolidayCalendar`, `add_business_days`, `business_days_between`
- recurrences: `Recurrence`, a small subset of iCalendar RRULE (DAILY/WEEKLY/MONTHLY/YEARLY)
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Callable, Iterable, Iterator

MONDAY, TUESDAY, WEDNESDAY, THURSDAY, FRIDAY, SATURDAY, SUNDAY = range(7)
WEEKDAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTH_NAMES = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]


class DateError(ValueError):
    """Input that cannot be read as a date, duration or rule."""


# -- parsing ------------------------------------------------------------------------------------------

_ISO_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_COMPACT_DATE = re.compile(r"^(\d{4})(\d{2})(\d{2})$")
_SLASH_DATE = re.compile(r"^(\d{1,2})[/.](\d{1,2})[/.](\d{4})$")
_ISO_WEEK_DATE = re.compile(r"^(\d{4})-?W(\d{2})-?(\d)$")
_ORDINAL_DATE = re.compile(r"^(\d{4})-(\d{3})$")
_WORDY_DATE = re.compile(r"^(?:(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})|([A-Za-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4}))$")


def month_from_name(name: str) -> int:
    """1-12 for a full or three-letter (or longer) English month name."""
    key = name.strip().lower().rstrip(".")
    if len(key) >= 3:
        for index, month in enumerate(MONTH_NAMES, start=1):
            if month.startswith(key):
                return index
    raise DateError(f"unknown month name {name!r}")


def weekday_from_name(name: str) -> int:
    """0 (Monday) to 6 (Sunday) for a full or abbreviated English weekday name."""
    key = name.strip().lower().rstrip(".")
    if len(key) >= 2:
        for index, day in enumerate(WEEKDAY_NAMES):
            if day.startswith(key):
                return index
    raise DateError(f"unknown weekday name {name!r}")


def _make_date(year: int, month: int, day: int, text: str) -> date:
    try:
        return date(year, month, day)
    except ValueError as exc:
        raise DateError(f"invalid date {text!r}: {exc}") from None


def parse_date(text: str, *, dayfirst: bool = True) -> date:
    """Read a date in any of the common forms.

    Accepted: 2024-03-05, 20240305, 2024-W10-2 (ISO week), 2024-065 (ordinal), 05/03/2024 (day first
    unless `dayfirst=False`), "5 March 2024", "Mar 5th, 2024".
    """
    value = text.strip()
    match = _ISO_DATE.match(value) or _COMPACT_DATE.match(value)
    if match:
        year, month, day = map(int, match.groups())
        return _make_date(year, month, day, text)
    match = _ISO_WEEK_DATE.match(value)
    if match:
        year, week, weekday = map(int, match.groups())
        try:
            return date.fromisocalendar(year, week, weekday)
        except ValueError as exc:
            raise DateError(f"invalid ISO week date {text!r}: {exc}") from None
    match = _ORDINAL_DATE.match(value)
    if match:
        year, ordinal = map(int, match.groups())
        if not 1 <= ordinal <= (366 if is_leap_year(year) else 365):
            raise DateError(f"day of year out of range in {text!r}")
        return date(year, 1, 1) + timedelta(days=ordinal - 1)
    match = _SLASH_DATE.match(value)
    if match:
        first, second, year = map(int, match.groups())
        day, month = (first, second) if dayfirst else (second, first)
        return _make_date(year, month, day, text)
    match = _WORDY_DATE.match(value)
    if match:
        d1, m1, y1, m2, d2, y2 = match.groups()
        if d1:
            return _make_date(int(y1), month_from_name(m1), int(d1), text)
        return _make_date(int(y2), month_from_name(m2), int(d2), text)
    raise DateError(f"unrecognized date {text!r}")


def parse_datetime(text: str) -> datetime:
    """ISO 8601 date-time ("2024-03-05T14:30", with optional seconds and offset) or a plain date."""
    value = text.strip().replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        pass
    day = parse_date(text)
    return datetime(day.year, day.month, day.day)


@dataclass(frozen=True)
class Duration:
    """A calendar duration: months and years vary in length, so they are kept apart from days/seconds."""

    years: int = 0
    months: int = 0
    days: int = 0
    seconds: float = 0.0

    def __add__(self, other: Duration) -> Duration:
        return Duration(self.years + other.years, self.months + other.months, self.days + other.days,
                        self.seconds + other.seconds)

    def __neg__(self) -> Duration:
        return Duration(-self.years, -self.months, -self.days, -self.seconds)

    def total_months(self) -> int:
        return self.years * 12 + self.months

    def apply(self, start: date | datetime) -> date | datetime:
        """`start` moved by this duration: months first (clamping the day), then days and seconds."""
        moved = add_months(start, self.total_months())
        moved = moved + timedelta(days=self.days)
        if self.seconds:
            if not isinstance(moved, datetime):
                moved = datetime(moved.year, moved.month, moved.day)
            moved = moved + timedelta(seconds=self.seconds)
        return moved

    def is_zero(self) -> bool:
        return not (self.years or self.months or self.days or self.seconds)


_DURATION = re.compile(
    r"^(?P<sign>-)?P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)


def parse_duration(text: str) -> Duration:
    """ISO 8601 duration: P1Y2M10DT2H30M, P3W, PT0.5S; a leading '-' negates."""
    match = _DURATION.match(text.strip().upper())
    if not match or text.strip().upper() in ("P", "-P") or text.strip().upper().endswith("T"):
        raise DateError(f"not an ISO 8601 duration: {text!r}")
    parts = {k: v for k, v in match.groupdict().items() if k != "sign"}
    number = {k: float(v) if k == "seconds" else int(v) for k, v in parts.items() if v is not None}
    seconds = number.get("hours", 0) * 3600 + number.get("minutes", 0) * 60 + number.get("seconds", 0)
    duration = Duration(years=number.get("years", 0), months=number.get("months", 0),
                        days=number.get("weeks", 0) * 7 + number.get("days", 0), seconds=seconds)
    return -duration if match.group("sign") else duration


def format_duration(duration: Duration) -> str:
    """Inverse of parse_duration (weeks are written as days)."""
    if duration.is_zero():
        return "PT0S"
    negative = any(v < 0 for v in (duration.years, duration.months, duration.days, duration.seconds))
    d = -duration if negative else duration
    text = "P"
    text += f"{d.years}Y" if d.years else ""
    text += f"{d.months}M" if d.months else ""
    text += f"{d.days}D" if d.days else ""
    if d.seconds:
        hours, rest = divmod(d.seconds, 3600)
        minutes, seconds = divmod(rest, 60)
        text += "T"
        text += f"{int(hours)}H" if hours else ""
        text += f"{int(minutes)}M" if minutes else ""
        if seconds:
            text += f"{seconds:g}S"
    return ("-" if negative else "") + text


_UNITS = [("year", 365 * 86400), ("month", 30 * 86400), ("week", 7 * 86400), ("day", 86400),
          ("hour", 3600), ("minute", 60), ("second", 1)]


def humanize_delta(delta: timedelta, *, precision: int = 1) -> str:
    """Rough, human wording of a time difference: "3 days ago", "in 2 hours, 5 minutes", "just now".

    Positive deltas are in the future. Months are 30 days and years 365 for this purpose.
    """
    total = delta.total_seconds()
    if abs(total) < 1:
        return "just now"
    remaining = abs(total)
    parts = []
    for name, size in _UNITS:
        if remaining >= size and len(parts) < precision:
            count = int(remaining // size)
            remaining -= count * size
            parts.append(f"{count} {name}{'s' if count != 1 else ''}")
    text = ", ".join(parts)
    return f"in {text}" if total > 0 else f"{text} ago"


_RELATIVE_AMOUNT = re.compile(r"^(?:in\s+(\d+)\s+([a-z]+)|(\d+)\s+([a-z]+)\s+ago)$")
_RELATIVE_WEEKDAY = re.compile(r"^(next|last|this)\s+([a-z]+)$")


def parse_relative(text: str, today: date | None = None) -> date:
    """Read everyday relative dates against `today` (default: the real today).

    Understood: "today", "tomorrow", "yesterday", "in 3 days", "2 weeks ago", "in 1 month",
    "next friday" (the first Friday after today), "last monday" (the last Monday before today),
    "this sunday" (within the current Monday-Sunday week), "end of month", "start of next month",
    and anything parse_date() accepts.
    """
    base = today or date.today()
    value = " ".join(text.strip().lower().split())
    fixed = {"today": 0, "tomorrow": 1, "yesterday": -1}
    if value in fixed:
        return base + timedelta(days=fixed[value])
    match = _RELATIVE_AMOUNT.match(value)
    if match:
        amount = int(match.group(1) or match.group(3))
        unit = (match.group(2) or match.group(4)).rstrip("s")
        if match.group(3):
            amount = -amount
        if unit == "day":
            return base + timedelta(days=amount)
        if unit == "week":
            return base + timedelta(weeks=amount)
        if unit == "month":
            return add_months(base, amount)
        if unit == "year":
            return add_years(base, amount)
        raise DateError(f"unknown unit {unit!r} in {text!r}")
    match = _RELATIVE_WEEKDAY.match(value)
    if match:
        which, name = match.groups()
        weekday = weekday_from_name(name)
        if which == "next":
            return base + timedelta(days=(weekday - base.weekday() - 1) % 7 + 1)
        if which == "last":
            return base - timedelta(days=(base.weekday() - weekday - 1) % 7 + 1)
        return start_of_week(base) + timedelta(days=weekday)
    named = {
        "end of month": lambda: end_of_month(base),
        "start of month": lambda: start_of_month(base),
        "start of next month": lambda: add_months(start_of_month(base), 1),
        "end of year": lambda: end_of_year(base),
        "end of quarter": lambda: quarter_end(base),
        "start of week": lambda: start_of_week(base),
    }
    if value in named:
        return named[value]()
    return parse_date(text)


# -- calendar arithmetic ------------------------------------------------------------------------------


def is_leap_year(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise DateError(f"month must be 1-12, got {month}")
    return calendar.monthrange(year, month)[1]


def add_months(day: date, months: int) -> date:
    """Move by whole months, clamping to the last day: Jan 31 + 1 month -> Feb 28/29.

    Works for datetimes too (the time of day is kept).
    """
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    if not 1 <= year <= 9999:
        raise DateError(f"{day} + {months} months is out of range")
    return day.replace(year=year, month=month, day=min(day.day, days_in_month(year, month)))


def add_years(day: date, years: int) -> date:
    """Move by whole years; Feb 29 becomes Feb 28 in non-leap years."""
    return add_months(day, 12 * years)


def start_of_month(day: date) -> date:
    return day.replace(day=1)


def end_of_month(day: date) -> date:
    return day.replace(day=days_in_month(day.year, day.month))


def start_of_year(day: date) -> date:
    return day.replace(month=1, day=1)


def end_of_year(day: date) -> date:
    return day.replace(month=12, day=31)


def start_of_week(day: date, week_start: int = MONDAY) -> date:
    """The most recent `week_start` weekday on or before `day`."""
    return day - timedelta(days=(day.weekday() - week_start) % 7)


def end_of_week(day: date, week_start: int = MONDAY) -> date:
    return start_of_week(day, week_start) + timedelta(days=6)


def day_of_year(day: date) -> int:
    return day.timetuple().tm_yday


def iso_week(day: date) -> tuple[int, int]:
    """(ISO year, ISO week number); the ISO year differs from the calendar year around New Year."""
    iso = day.isocalendar()
    return iso[0], iso[1]


def week_of_month(day: date, week_start: int = MONDAY) -> int:
    """1-based week row of `day` in a month calendar whose weeks start on `week_start`."""
    first = day.replace(day=1)
    offset = (first.weekday() - week_start) % 7
    return (day.day + offset - 1) // 7 + 1


def nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th `weekday` of a month (n=1 first, n=-1 last): 4th Thursday of November is Thanksgiving."""
    if n == 0 or not -5 <= n <= 5:
        raise DateError(f"n must be 1..5 or -1..-5, got {n}")
    if n > 0:
        first = date(year, month, 1)
        result = first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    else:
        last = date(year, month, days_in_month(year, month))
        result = last - timedelta(days=(last.weekday() - weekday) % 7 + 7 * (-n - 1))
    if result.month != month:
        raise DateError(f"{year}-{month:02d} has no weekday {weekday} number {n}")
    return result


def quarter_of(day: date) -> int:
    """Calendar quarter 1-4: January-March is Q1."""
    return day.month // 3 + 1


def quarter_start(day: date) -> date:
    """First day of the quarter containing `day`."""
    return date(day.year, 3 * (quarter_of(day) - 1) + 1, 1)


def quarter_end(day: date) -> date:
    """Last day of the quarter containing `day`."""
    last_month = 3 * quarter_of(day)
    return date(day.year, last_month, days_in_month(day.year, last_month))


def quarter_label(day: date) -> str:
    """"2024-Q3" style label used in report headings."""
    return f"{day.year}-Q{quarter_of(day)}"


def quarters_between(start: date, end: date) -> list[str]:
    """Labels of every quarter touched by [start, end], in order."""
    if end < start:
        raise DateError("end is before start")
    labels = []
    current = quarter_start(start)
    while current <= end:
        labels.append(quarter_label(current))
        current = add_months(current, 3)
    return labels


def fiscal_year(day: date, start_month: int = 1) -> int:
    """Fiscal year containing `day`, named after the calendar year in which it ends.

    With start_month=10 (US federal), 2023-10-01 .. 2024-09-30 is fiscal 2024.
    """
    if not 1 <= start_month <= 12:
        raise DateError(f"start_month must be 1-12, got {start_month}")
    if start_month == 1:
        return day.year
    return day.year + 1 if day.month >= start_month else day.year


def fiscal_quarter(day: date, start_month: int = 1) -> int:
    """Quarter 1-4 within the fiscal year that starts in `start_month`."""
    if not 1 <= start_month <= 12:
        raise DateError(f"start_month must be 1-12, got {start_month}")
    months_in = (day.month - start_month) % 12
    return months_in // 3 + 1


def fiscal_year_start(day: date, start_month: int = 1) -> date:
    year = fiscal_year(day, start_month)
    return date(year if start_month == 1 else year - 1, start_month, 1)


# -- ranges -------------------------------------------------------------------------------------------


def date_range(start: date, end: date, step: int = 1, *, inclusive: bool = True) -> Iterator[date]:
    """Dates from `start` to `end` every `step` days (negative steps count down)."""
    if step == 0:
        raise DateError("step must not be zero")
    current = start
    delta = timedelta(days=step)
    if step > 0:
        while current < end or (inclusive and current == end):
            yield current
            current += delta
    else:
        while current > end or (inclusive and current == end):
            yield current
            current += delta


def month_range(start: date, end: date) -> Iterator[date]:
    """First day of every month from start's month through end's month."""
    current = start_of_month(start)
    last = start_of_month(end)
    while current <= last:
        yield current
        current = add_months(current, 1)


def months_between(start: date, end: date) -> int:
    """Whole months from `start` to `end` (negative if end is earlier); Jan 31 -> Feb 28 counts as 0."""
    if end < start:
        return -months_between(end, start)
    months = (end.year - start.year) * 12 + (end.month - start.month)
    if add_months(start, months) > end:
        months -= 1
    return months


def age(born: date, on: date | None = None) -> int:
    """Age in whole years on the given day (today by default); Feb 29 birthdays count on Feb 28."""
    today = on or date.today()
    if today < born:
        raise DateError("born after the reference date")
    return months_between(born, today) // 12


def overlap_days(first: tuple[date, date], second: tuple[date, date]) -> int:
    """Number of days shared by two inclusive date ranges."""
    start = max(first[0], second[0])
    end = min(first[1], second[1])
    return max(0, (end - start).days + 1)


def split_by_month(start: date, end: date) -> list[tuple[date, date]]:
    """Split an inclusive range into per-month pieces, e.g. for pro-rating a subscription."""
    if end < start:
        raise DateError("end is before start")
    pieces = []
    current = start
    while current <= end:
        piece_end = min(end_of_month(current), end)
        pieces.append((current, piece_end))
        current = piece_end + timedelta(days=1)
    return pieces


# -- holidays and business days -----------------------------------------------------------------------


def easter_sunday(year: int) -> date:
    """Western (Gregorian) Easter Sunday, by the anonymous Gregorian algorithm."""
    a = year % 19
    b, c = divmod(year, 100)
    d, e = divmod(b, 4)
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    l = (32 + 2 * e + 2 * i - h - k) % 7  # noqa: E741 - the algorithm's own names
    m = (a + 11 * h + 22 * l) // 451
    month, day = divmod(h + l - 7 * m + 114, 31)
    return date(year, month, day + 1)


@dataclass(frozen=True)
class HolidayRule:
    """One holiday: a fixed date, the n-th weekday of a month, or an offset from Easter.

    `observed` moves fixed-date holidays that fall on a weekend: "nearest" (Sat -> Fri, Sun -> Mon),
    "monday" (Sat/Sun -> Mon) or None.
    """

    name: str
    month: int | None = None
    day: int | None = None
    weekday: int | None = None
    nth: int | None = None
    easter_offset: int | None = None
    observed: str | None = None

    def date_in(self, year: int) -> date:
        if self.easter_offset is not None:
            return easter_sunday(year) + timedelta(days=self.easter_offset)
        if self.weekday is not None and self.nth is not None and self.month is not None:
            return nth_weekday(year, self.month, self.weekday, self.nth)
        if self.month is not None and self.day is not None:
            actual = date(year, self.month, self.day)
            return _observed(actual, self.observed)
        raise DateError(f"holiday rule {self.name!r} is incomplete")


def _observed(day: date, policy: str | None) -> date:
    if policy is None or day.weekday() < SATURDAY:
        return day
    if policy == "nearest":
        return day - timedelta(days=1) if day.weekday() == SATURDAY else day + timedelta(days=1)
    if policy == "monday":
        return day + timedelta(days=7 - day.weekday())
    raise DateError(f"unknown observed policy {policy!r}")


US_FEDERAL = [
    HolidayRule("New Year's Day", month=1, day=1, observed="nearest"),
    HolidayRule("Martin Luther King Jr. Day", month=1, weekday=MONDAY, nth=3),
    HolidayRule("Presidents' Day", month=2, weekday=MONDAY, nth=3),
    HolidayRule("Memorial Day", month=5, weekday=MONDAY, nth=-1),
    HolidayRule("Juneteenth", month=6, day=19, observed="nearest"),
    HolidayRule("Independence Day", month=7, day=4, observed="nearest"),
    HolidayRule("Labor Day", month=9, weekday=MONDAY, nth=1),
    HolidayRule("Columbus Day", month=10, weekday=MONDAY, nth=2),
    HolidayRule("Veterans Day", month=11, day=11, observed="nearest"),
    HolidayRule("Thanksgiving", month=11, weekday=THURSDAY, nth=4),
    HolidayRule("Christmas Day", month=12, day=25, observed="nearest"),
]

UK_ENGLAND = [
    HolidayRule("New Year's Day", month=1, day=1, observed="monday"),
    HolidayRule("Good Friday", easter_offset=-2),
    HolidayRule("Easter Monday", easter_offset=1),
    HolidayRule("Early May bank holiday", month=5, weekday=MONDAY, nth=1),
    HolidayRule("Spring bank holiday", month=5, weekday=MONDAY, nth=-1),
    HolidayRule("Summer bank holiday", month=8, weekday=MONDAY, nth=-1),
    HolidayRule("Christmas Day", month=12, day=25, observed="monday"),
]


@dataclass
class HolidayCalendar:
    """Working days: not a weekend day and not a holiday (from rules or added explicitly)."""

    rules: list[HolidayRule] = field(default_factory=list)
    weekend: frozenset[int] = frozenset({SATURDAY, SUNDAY})
    extra: dict[date, str] = field(default_factory=dict)
    _cache: dict[int, dict[date, str]] = field(default_factory=dict, repr=False)

    def add_holiday(self, day: date, name: str) -> None:
        self.extra[day] = name

    def holidays(self, year: int) -> dict[date, str]:
        """Holiday dates of `year` mapped to their names (rules plus explicit additions)."""
        if year not in self._cache:
            found = {}
            for rule in self.rules:
                found[rule.date_in(year)] = rule.name
            self._cache[year] = found
        result = dict(self._cache[year])
        result.update({d: n for d, n in self.extra.items() if d.year == year})
        return result

    def holiday_name(self, day: date) -> str | None:
        return self.holidays(day.year).get(day)

    def is_business_day(self, day: date) -> bool:
        return day.weekday() not in self.weekend and day not in self.holidays(day.year)

    def next_business_day(self, day: date, *, include_today: bool = False) -> date:
        current = day if include_today else day + timedelta(days=1)
        while not self.is_business_day(current):
            current += timedelta(days=1)
        return current

    def previous_business_day(self, day: date, *, include_today: bool = False) -> date:
        current = day if include_today else day - timedelta(days=1)
        while not self.is_business_day(current):
            current -= timedelta(days=1)
        return current

    def add_business_days(self, day: date, count: int) -> date:
        """Move `count` business days forward (or back when negative); 0 rolls forward to a business day."""
        if count == 0:
            return self.next_business_day(day, include_today=True)
        step = 1 if count > 0 else -1
        current = day
        remaining = abs(count)
        while remaining:
            current += timedelta(days=step)
            if self.is_business_day(current):
                remaining -= 1
        return current

    def business_days_between(self, start: date, end: date) -> int:
        """Business days after `start` up to and including `end` (like counting delivery days)."""
        if end < start:
            return -self.business_days_between(end, start)
        return sum(1 for d in date_range(start + timedelta(days=1), end) if self.is_business_day(d))

    def business_days_in_month(self, year: int, month: int) -> list[date]:
        first = date(year, month, 1)
        return [d for d in date_range(first, end_of_month(first)) if self.is_business_day(d)]


def add_business_days(day: date, count: int, calendar_: HolidayCalendar | None = None) -> date:
    """Shortcut using a weekends-only calendar unless one is given."""
    return (calendar_ or HolidayCalendar()).add_business_days(day, count)


def business_days_between(start: date, end: date, calendar_: HolidayCalendar | None = None) -> int:
    return (calendar_ or HolidayCalendar()).business_days_between(start, end)


# -- recurrences --------------------------------------------------------------------------------------

FREQUENCIES = ("DAILY", "WEEKLY", "MONTHLY", "YEARLY")


@dataclass(frozen=True)
class Recurrence:
    """A repeating date rule, a subset of iCalendar RRULE.

    freq: DAILY, WEEKLY, MONTHLY or YEARLY; interval: every n periods; byweekday: weekdays for WEEKLY
    rules (default: the start's weekday); bymonthday: day of month for MONTHLY rules (negative counts from
    the end, -1 = last day); count / until: when to stop (at least one is required for `all()`).
    Months without the requested day (the 31st in April) are skipped, as RRULE does.
    """

    start: date
    freq: str
    interval: int = 1
    byweekday: tuple[int, ...] = ()
    bymonthday: int | None = None
    count: int | None = None
    until: date | None = None

    def __post_init__(self) -> None:
        if self.freq not in FREQUENCIES:
            raise DateError(f"freq must be one of {FREQUENCIES}, got {self.freq!r}")
        if self.interval < 1:
            raise DateError("interval must be at least 1")
        if self.count is not None and self.count < 1:
            raise DateError("count must be at least 1")
        if self.byweekday and self.freq != "WEEKLY":
            raise DateError("byweekday is only supported for WEEKLY rules")
        if self.bymonthday is not None and (self.freq != "MONTHLY" or not 1 <= abs(self.bymonthday) <= 31):
            raise DateError("bymonthday must be +-1..31 on a MONTHLY rule")

    def _candidates(self) -> Iterator[date]:
        if self.freq == "DAILY":
            current = self.start
            while True:
                yield current
                current += timedelta(days=self.interval)
        elif self.freq == "WEEKLY":
            weekdays = sorted(self.byweekday or (self.start.weekday(),))
            week = start_of_week(self.start)
            while True:
                for weekday in weekdays:
                    candidate = week + timedelta(days=weekday)
                    if candidate >= self.start:
                        yield candidate
                week += timedelta(weeks=self.interval)
        elif self.freq == "MONTHLY":
            wanted = self.bymonthday or self.start.day
            step = 0
            while True:
                month = add_months(start_of_month(self.start), step)
                length = days_in_month(month.year, month.month)
                day = wanted if wanted > 0 else length + wanted + 1
                if 1 <= day <= length:
                    candidate = month.replace(day=day)
                    if candidate >= self.start:
                        yield candidate
                step += self.interval
        else:  # YEARLY
            step = 0
            while True:
                year = self.start.year + step
                if self.start.month != 2 or self.start.day != 29 or is_leap_year(year):
                    yield self.start.replace(year=year)
                step += self.interval

    def __iter__(self) -> Iterator[date]:
        for produced, candidate in enumerate(self._candidates()):
            if self.count is not None and produced >= self.count:
                return
            if self.until is not None and candidate > self.until:
                return
            yield candidate

    def all(self) -> list[date]:
        if self.count is None and self.until is None:
            raise DateError("an unbounded rule needs count or until before listing all dates")
        return list(self)

    def between(self, start: date, end: date) -> list[date]:
        """Occurrences within [start, end]."""
        result = []
        for occurrence in self:
            if occurrence > end:
                break
            if occurrence >= start:
                result.append(occurrence)
        return result

    def next_after(self, day: date) -> date | None:
        for occurrence in self:
            if occurrence > day:
                return occurrence
        return None


_RRULE_PART = re.compile(r"^([A-Z]+)=(.+)$")
_RRULE_DAYS = {"MO": 0, "TU": 1, "WE": 2, "TH": 3, "FR": 4, "SA": 5, "SU": 6}


def parse_rrule(text: str, start: date) -> Recurrence:
    """Recurrence from an RRULE string such as "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE;COUNT=6"."""
    options: dict[str, object] = {}
    body = text.strip()
    if body.upper().startswith("RRULE:"):
        body = body[6:]
    for part in filter(None, body.split(";")):
        match = _RRULE_PART.match(part.strip().upper())
        if not match:
            raise DateError(f"bad RRULE part {part!r}")
        key, value = match.groups()
        if key == "FREQ":
            options["freq"] = value
        elif key == "INTERVAL":
            options["interval"] = int(value)
        elif key == "COUNT":
            options["count"] = int(value)
        elif key == "UNTIL":
            options["until"] = parse_date(value[:8])
        elif key == "BYDAY":
            try:
                options["byweekday"] = tuple(_RRULE_DAYS[d] for d in value.split(","))
            except KeyError as exc:
                raise DateError(f"unknown weekday {exc.args[0]!r} in {text!r}") from None
        elif key == "BYMONTHDAY":
            options["bymonthday"] = int(value)
        else:
            raise DateError(f"unsupported RRULE part {key}")
    if "freq" not in options:
        raise DateError(f"RRULE without FREQ: {text!r}")
    return Recurrence(start=start, **options)


# -- grouping helpers for reports ---------------------------------------------------------------------


def group_by_period(days: Iterable[date], period: str) -> dict[str, list[date]]:
    """Group dates by "day", "week" (ISO), "month", "quarter" or "year", keyed by a sortable label."""
    labelers: dict[str, Callable[[date], str]] = {
        "day": lambda d: d.isoformat(),
        "week": lambda d: "{}-W{:02d}".format(*iso_week(d)),
        "month": lambda d: f"{d.year}-{d.month:02d}",
        "quarter": quarter_label,
        "year": lambda d: str(d.year),
    }
    try:
        label = labelers[period]
    except KeyError:
        raise DateError(f"period must be one of {sorted(labelers)}, got {period!r}") from None
    groups: dict[str, list[date]] = {}
    for day in sorted(days):
        groups.setdefault(label(day), []).append(day)
    return groups


def period_bounds(day: date, period: str) -> tuple[date, date]:
    """First and last day of the period ("week", "month", "quarter", "year") containing `day`."""
    if period == "week":
        return start_of_week(day), end_of_week(day)
    if period == "month":
        return start_of_month(day), end_of_month(day)
    if period == "quarter":
        return quarter_start(day), quarter_end(day)
    if period == "year":
        return start_of_year(day), end_of_year(day)
    raise DateError(f"unknown period {period!r}")


def previous_period(day: date, period: str) -> tuple[date, date]:
    """Bounds of the period before the one containing `day` (e.g. last month, last quarter)."""
    start, _ = period_bounds(day, period)
    return period_bounds(start - timedelta(days=1), period)


def same_period_last_year(day: date, period: str) -> tuple[date, date]:
    """Bounds of the matching period one year earlier, for year-over-year comparisons."""
    return period_bounds(add_years(day, -1), period)


# -- working hours ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkingHours:
    """Office hours on business days, for SLA clocks ("respond within 8 working hours").

    `opens` and `closes` are hours of the day (9 and 17.5 mean 09:00-17:30); the calendar decides which
    days are worked.
    """

    opens: float = 9.0
    closes: float = 17.0
    calendar: HolidayCalendar = field(default_factory=HolidayCalendar)

    def __post_init__(self) -> None:
        if not 0 <= self.opens < self.closes <= 24:
            raise DateError(f"working hours must satisfy 0 <= opens < closes <= 24, got {self.opens}-{self.closes}")

    def _bounds(self, day: date) -> tuple[datetime, datetime]:
        midnight = datetime(day.year, day.month, day.day)
        return midnight + timedelta(hours=self.opens), midnight + timedelta(hours=self.closes)

    def is_open(self, moment: datetime) -> bool:
        if not self.calendar.is_business_day(moment.date()):
            return False
        opens, closes = self._bounds(moment.date())
        return opens <= moment < closes

    def working_time_between(self, start: datetime, end: datetime) -> timedelta:
        """Working time elapsed from `start` to `end` (zero if end is not after start)."""
        total = timedelta()
        if end <= start:
            return total
        for day in date_range(start.date(), end.date()):
            if not self.calendar.is_business_day(day):
                continue
            opens, closes = self._bounds(day)
            lo, hi = max(opens, start), min(closes, end)
            if hi > lo:
                total += hi - lo
        return total

    def add_working_time(self, start: datetime, amount: timedelta) -> datetime:
        """The moment when `amount` of working time has elapsed after `start`."""
        if amount < timedelta():
            raise DateError("amount must not be negative")
        remaining = amount
        current = start
        while True:
            day = current.date()
            opens, closes = self._bounds(day)
            if self.calendar.is_business_day(day) and current < closes:
                current = max(current, opens)
                available = closes - current
                if remaining <= available:
                    return current + remaining
                remaining -= available
            next_day = self.calendar.next_business_day(day)
            current = self._bounds(next_day)[0]


# -- month grids --------------------------------------------------------------------------------------


def month_grid(year: int, month: int, week_start: int = MONDAY) -> list[list[date | None]]:
    """Weeks of a month as rows of 7 cells (None outside the month), as a calendar widget shows them."""
    first = date(year, month, 1)
    lead = (first.weekday() - week_start) % 7
    cells: list[date | None] = [None] * lead
    cells += [date(year, month, d) for d in range(1, days_in_month(year, month) + 1)]
    cells += [None] * (-len(cells) % 7)
    return [cells[i:i + 7] for i in range(0, len(cells), 7)]


def format_month(year: int, month: int, week_start: int = MONDAY,
                 marks: Iterable[date] = ()) -> str:
    """Plain-text month calendar; days in `marks` are flagged with '*'."""
    marked = set(marks)
    names = [WEEKDAY_NAMES[(week_start + i) % 7][:2].title() for i in range(7)]
    lines = [f"{MONTH_NAMES[month - 1].title()} {year}".center(27).rstrip(), " ".join(f"{n:>3}" for n in names)]
    for week in month_grid(year, month, week_start):
        cells = []
        for day in week:
            if day is None:
                cells.append("   ")
            else:
                cells.append(f"{day.day:>2}" + ("*" if day in marked else " "))
        lines.append(" ".join(cells).rstrip())
    return "\n".join(lines)
