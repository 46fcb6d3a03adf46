import pytest

from leaguetable import parse_results, render, standings
from leaguetable.table import zone

SEASON = """
2024-08-10 Ajax 3-0 Breda
2024-08-10 Cambuur 1-0 Delft
2024-08-17 Ajax 0-1 Cambuur
2024-08-17 Breda 4-0 Delft
2024-08-24 Delft 2-2 Ajax
2024-08-24 Breda 1-1 Cambuur
"""
# Ajax: W L D  4 pts GF 5 GA 3 (+2) | Cambuur: W W D 7 pts GF 3 GA 1 (+2)
# Breda: L W D 4 pts GF 5 GA 4 (+1) | Delft: L L D 1 pt GF 2 GA 8 (-6)


def table_of(text, **kwargs):
    return [(s.label, s.row.team, s.points) for s in standings(parse_results(text), **kwargs)]


def test_points_decide_first():
    assert table_of(SEASON)[0] == ("1", "Cambuur", 7)
    assert table_of(SEASON)[-1] == ("4", "Delft", 1)


def test_goal_difference_breaks_a_points_tie():
    assert table_of(SEASON) == [("1", "Cambuur", 7), ("2", "Ajax", 4), ("3", "Breda", 4), ("4", "Delft", 1)]


def test_goals_scored_break_a_goal_difference_tie():
    text = "2024-01-06 North 3-2 South\n2024-01-13 East 1-0 West\n"
    # North and East: 3 pts, +1; North scored more
    assert [t for _, t, _ in table_of(text)] == ["North", "East", "South", "West"]


def test_teams_level_on_everything_share_a_place():
    text = "2024-01-06 A 1-0 B\n2024-01-06 C 1-0 D\n2024-01-13 E 2-2 F\n"
    assert table_of(text) == [("1=", "A", 3), ("1=", "C", 3), ("3=", "E", 1), ("3=", "F", 1),
                              ("5=", "B", 0), ("5=", "D", 0)]


def test_same_points_but_different_goal_difference_do_not_share():
    text = "2024-01-06 A 3-0 B\n2024-01-06 C 1-0 D\n"
    assert table_of(text) == [("1", "A", 3), ("2", "C", 3), ("3", "D", 0), ("4", "B", 0)]


def test_teams_without_matches_and_deductions():
    rows = table_of("2024-01-06 A 1-0 B\n", teams=["Z"], deductions={"A": 3})
    assert rows == [("1", "A", 0), ("2", "Z", 0), ("3", "B", 0)]
    with pytest.raises(KeyError):
        table_of("2024-01-06 A 1-0 B\n", deductions={"Q": 1})


def test_custom_points():
    assert table_of("2024-01-06 A 0-0 B\n2024-01-06 C 1-0 D\n", win=2)[0] == ("1", "C", 2)
    with pytest.raises(ValueError):
        table_of("2024-01-06 A 0-0 B\n", win=1, draw=1)


def test_zones_and_render():
    table = standings(parse_results(SEASON))
    assert zone(table, top=1, bottom=1) == (["Cambuur"], ["Delft"])
    text = render(table)
    assert text.splitlines()[1].split() == ["1", "Cambuur", "3", "2", "1", "0", "3", "1", "+2", "7", "WWD"]
