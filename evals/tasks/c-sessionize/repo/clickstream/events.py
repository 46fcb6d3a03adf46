"""Page-view events from access-log style lines: '2024-03-01T10:00:00 user-17 /pricing'."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class Event:
    user: str
    ts: datetime
    page: str


def parse_events(text: str) -> list[Event]:
    events = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 3:
            raise ValueError(f"line {number}: expected 'timestamp user page', got {line!r}")
        stamp, user, page = parts
        try:
            ts = datetime.fromisoformat(stamp)
        except ValueError as exc:
            raise ValueError(f"line {number}: bad timestamp {stamp!r}") from exc
        events.append(Event(user, ts, page))
    return events
