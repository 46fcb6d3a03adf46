"""Sessions: a visitor's events with no pause longer than `gap` (30 minutes by default, as analytics
tools count it). A session lasts from its first to its last event; an event exactly `gap` after the
previous one still belongs to the session."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable

from clickstream.events import Event

DEFAULT_GAP = timedelta(minutes=30)


@dataclass
class Session:
    user: str
    start: datetime
    end: datetime
    events: list[Event] = field(default_factory=list)

    @property
    def duration(self) -> timedelta:
        return self.end - self.start

    @property
    def pages(self) -> list[str]:
        return [e.page for e in self.events]

    @property
    def bounced(self) -> bool:
        return len(self.events) == 1

    def add(self, event: Event) -> None:
        self.events.append(event)
        self.end = max(self.end, event.ts)


def _new_session(event: Event) -> Session:
    return Session(event.user, event.ts, event.ts, [event])


def sessionize(events: Iterable[Event], gap: timedelta = DEFAULT_GAP) -> list[Session]:
    """All sessions, ordered by start time (then user)."""
    if gap <= timedelta(0):
        raise ValueError("gap must be positive")
    sessions: list[Session] = []
    current: dict[str, Session] = {}
    for event in sorted(events, key=lambda e: (e.ts, e.user)):
        session = current.get(event.user)
        if session is not None and event.ts - session.start <= gap:
            session.add(event)
        else:
            current[event.user] = _new_session(event)
            sessions.append(current[event.user])
    return sorted(sessions, key=lambda s: (s.start, s.user))


def summarize(sessions: list[Session]) -> dict[str, float]:
    if not sessions:
        return {"sessions": 0, "users": 0, "bounce_rate": 0.0, "avg_duration_s": 0.0, "pages_per_session": 0.0}
    return {
        "sessions": len(sessions),
        "users": len({s.user for s in sessions}),
        "bounce_rate": sum(s.bounced for s in sessions) / len(sessions),
        "avg_duration_s": sum(s.duration.total_seconds() for s in sessions) / len(sessions),
        "pages_per_session": sum(len(s.events) for s in sessions) / len(sessions),
    }


class SessionTracker:
    """The live version: feed events in time order, collect sessions once they have gone quiet."""

    def __init__(self, gap: timedelta = DEFAULT_GAP):
        if gap <= timedelta(0):
            raise ValueError("gap must be positive")
        self.gap = gap
        self.open: dict[str, Session] = {}

    def add(self, event: Event) -> Session | None:
        """Add `event`; returns the user's previous session if this event started a new one."""
        session = self.open.get(event.user)
        if session is not None and event.ts < session.end:
            raise ValueError(f"events for {event.user} arrived out of order")
        if session is not None and event.ts - session.start <= self.gap:
            session.add(event)
            return None
        self.open[event.user] = _new_session(event)
        return session

    def expire(self, now: datetime) -> list[Session]:
        """Close and return the sessions that have been quiet for longer than the gap at `now`."""
        done = [s for s in self.open.values() if now - s.start > self.gap]
        for session in done:
            del self.open[session.user]
        return sorted(done, key=lambda s: s.start)

    def flush(self) -> list[Session]:
        done = sorted(self.open.values(), key=lambda s: s.start)
        self.open.clear()
        return done
