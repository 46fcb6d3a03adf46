"""Time zones that follow the EU summer-time rule, without needing the system's tz database.

Summer time starts on the last Sunday of March and ends on the last Sunday of October, both at 01:00 UTC.
Local times in the repeated autumn hour are told apart by `fold` (0: the first, summer-time pass).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo

UTC = timezone.utc
ZERO = timedelta(0)
HOUR = timedelta(hours=1)


def last_sunday(year: int, month: int) -> datetime:
    """Midnight (naive) of the last Sunday of `month`."""
    first_of_next = datetime(year + month // 12, month % 12 + 1, 1)
    last_day = first_of_next - timedelta(days=1)
    return last_day - timedelta(days=(last_day.weekday() + 1) % 7)


class EuropeanZone(tzinfo):
    """A fixed standard offset plus one hour of summer time under the EU rule."""

    def __init__(self, name: str, std_hours: int, std_abbr: str, dst_abbr: str):
        self.name = name
        self.std = timedelta(hours=std_hours)
        self.std_abbr = std_abbr
        self.dst_abbr = dst_abbr

    def __repr__(self) -> str:
        return f"EuropeanZone({self.name!r})"

    def _switches_utc(self, year: int) -> tuple[datetime, datetime]:
        """Naive UTC instants at which summer time starts and ends in `year`."""
        one_am = timedelta(hours=1)
        return last_sunday(year, 3) + one_am, last_sunday(year, 10) + one_am

    def _switches_wall(self, year: int) -> tuple[datetime, datetime]:
        """The same instants as local wall times: the start of the skipped hour, the end of the repeated one."""
        start, end = self._switches_utc(year)
        return start + self.std, end + self.std + HOUR

    def dst(self, dt: datetime | None) -> timedelta:
        if dt is None:
            return ZERO
        start, end = self._switches_wall(dt.year)
        naive = dt.replace(tzinfo=None)
        if start + HOUR <= naive < end - HOUR:
            return HOUR
        if end - HOUR <= naive < end:  # the repeated hour
            return ZERO if dt.fold else HOUR
        if start <= naive < start + HOUR:  # the skipped hour: read as standard time unless fold says otherwise
            return HOUR if dt.fold else ZERO
        return ZERO

    def utcoffset(self, dt: datetime | None) -> timedelta:
        return self.std + self.dst(dt)

    def tzname(self, dt: datetime | None) -> str:
        return self.dst_abbr if self.dst(dt) else self.std_abbr

    def fromutc(self, dt: datetime) -> datetime:
        if dt.tzinfo is not self:
            raise ValueError("fromutc: dt.tzinfo is not self")
        start, end = self._switches_utc(dt.year)
        naive = dt.replace(tzinfo=None)
        standard = naive + self.std
        if start <= naive < end:
            return (standard + HOUR).replace(tzinfo=self)
        if end <= naive < end + HOUR:
            return standard.replace(tzinfo=self, fold=1)
        return standard.replace(tzinfo=self)


LONDON = EuropeanZone("Europe/London", 0, "GMT", "BST")
BERLIN = EuropeanZone("Europe/Berlin", 1, "CET", "CEST")
HELSINKI = EuropeanZone("Europe/Helsinki", 2, "EET", "EEST")
