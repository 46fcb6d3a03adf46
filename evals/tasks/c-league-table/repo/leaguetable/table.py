"""Standings: points, then goal difference, then goals scored; teams level on all three share a place.

Places are shown like "1", "2=", "2=", "4": the next place after a tie skips the shared ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from leaguetable.results import Match

FORM_LENGTH = 5


@dataclass
class Row:
    team: str
    won: int = 0
    drawn: int = 0
    lost: int = 0
    goals_for: int = 0
    goals_against: int = 0
    deduction: int = 0  # points taken away by the league
    form: list[str] = field(default_factory=list)  # "W", "D", "L", most recent last

    @property
    def played(self) -> int:
        return self.won + self.drawn + self.lost

    @property
    def goal_difference(self) -> int:
        return self.goals_for - self.goals_against

    def points(self, win: int = 3, draw: int = 1) -> int:
        return self.won * win + self.drawn * draw - self.deduction

    def record(self, scored: int, conceded: int) -> None:
        self.goals_for += scored
        self.goals_against += conceded
        if scored > conceded:
            self.won += 1
            self.form.append("W")
        elif scored == conceded:
            self.drawn += 1
            self.form.append("D")
        else:
            self.lost += 1
            self.form.append("L")


@dataclass(frozen=True)
class Standing:
    place: int
    tied: bool
    row: Row
    points: int

    @property
    def label(self) -> str:
        return f"{self.place}=" if self.tied else str(self.place)


def _order(row: Row, win: int, draw: int) -> tuple[int, int, int]:
    """The ranking criteria, best first when sorted ascending."""
    return (-row.points(win, draw), row.goal_difference, -row.goals_for)


def build_rows(matches: Iterable[Match], teams: Iterable[str] = (),
               deductions: dict[str, int] | None = None) -> dict[str, Row]:
    """One row per team; `teams` adds teams that have not played yet."""
    rows = {team: Row(team) for team in teams}
    for match in sorted(matches, key=lambda m: m.day):
        rows.setdefault(match.home, Row(match.home)).record(match.home_goals, match.away_goals)
        rows.setdefault(match.away, Row(match.away)).record(match.away_goals, match.home_goals)
    for team, points in (deductions or {}).items():
        if team not in rows:
            raise KeyError(f"deduction for unknown team {team!r}")
        rows[team].deduction += points
    return rows


def standings(matches: Iterable[Match], teams: Iterable[str] = (), win: int = 3, draw: int = 1,
              deductions: dict[str, int] | None = None) -> list[Standing]:
    """The table, best first; ties on every criterion are listed by name and share a place."""
    if win <= draw or draw < 0:
        raise ValueError("a win must be worth more than a draw, and a draw cannot be negative")
    rows = build_rows(matches, teams, deductions)
    ordered = sorted(rows.values(), key=lambda r: (*_order(r, win, draw), r.team.casefold()))
    table: list[Standing] = []
    for index, row in enumerate(ordered):
        previous = ordered[index - 1] if index else None
        following = ordered[index + 1] if index + 1 < len(ordered) else None
        same_as_previous = previous is not None and previous.points(win, draw) == row.points(win, draw)
        same_as_next = following is not None and following.points(win, draw) == row.points(win, draw)
        place = table[-1].place if same_as_previous else index + 1
        table.append(Standing(place, same_as_previous or same_as_next, row, row.points(win, draw)))
    return table


def zone(table: list[Standing], top: int = 0, bottom: int = 0) -> tuple[list[str], list[str]]:
    """Teams in the top `top` and bottom `bottom` places (by position in the list, ties included as listed)."""
    names = [s.row.team for s in table]
    return names[:top], names[len(names) - bottom:] if bottom else []


def render(table: list[Standing]) -> str:
    """A fixed-width text table."""
    width = max([len(s.row.team) for s in table] + [4])
    header = f"{'Pos':>4}  {'Team':<{width}}  {'P':>2} {'W':>2} {'D':>2} {'L':>2} {'GF':>3} {'GA':>3} {'GD':>4} {'Pts':>3}"
    lines = [header]
    for s in table:
        r = s.row
        lines.append(
            f"{s.label:>4}  {r.team:<{width}}  {r.played:>2} {r.won:>2} {r.drawn:>2} {r.lost:>2} "
            f"{r.goals_for:>3} {r.goals_against:>3} {r.goal_difference:>+4} {s.points:>3}"
            + (f"  {''.join(r.form[-FORM_LENGTH:])}" if r.form else "")
        )
    return "\n".join(lines)
