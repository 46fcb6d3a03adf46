"""Match results as text: one per line, "2024-08-17 Arsenal 2-0 Wolves" (team names may have spaces)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

_LINE = re.compile(r"^(?P<day>\d{4}-\d{2}-\d{2})\s+(?P<home>.+?)\s+(?P<hg>\d+)\s*-\s*(?P<ag>\d+)\s+(?P<away>.+)$")


@dataclass(frozen=True)
class Match:
    day: date
    home: str
    away: str
    home_goals: int
    away_goals: int

    def __post_init__(self) -> None:
        if self.home == self.away:
            raise ValueError(f"{self.home} cannot play itself")
        if self.home_goals < 0 or self.away_goals < 0:
            raise ValueError("goals cannot be negative")

    @property
    def winner(self) -> str | None:
        if self.home_goals == self.away_goals:
            return None
        return self.home if self.home_goals > self.away_goals else self.away


def parse_results(text: str) -> list[Match]:
    """Parse result lines; blank lines and '#' comments are skipped; a bad line raises with its number."""
    matches = []
    seen: set[tuple[date, str]] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            raise ValueError(f"line {number}: cannot read {raw!r}")
        match = Match(date.fromisoformat(m["day"]), m["home"], m["away"], int(m["hg"]), int(m["ag"]))
        for team in (match.home, match.away):
            if (match.day, team) in seen:
                raise ValueError(f"line {number}: {team} already played on {match.day}")
            seen.add((match.day, team))
        matches.append(match)
    return matches
