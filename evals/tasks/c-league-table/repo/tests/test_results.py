from datetime import date

import pytest

from leaguetable import Match, parse_results


def test_parse_lines_with_spaces_in_names():
    (m,) = parse_results("2024-08-17  Manchester City 2-0 Nottingham Forest  # opener\n")
    assert m == Match(date(2024, 8, 17), "Manchester City", "Nottingham Forest", 2, 0)
    assert m.winner == "Manchester City"


def test_blank_lines_and_draws():
    matches = parse_results("\n# week 1\n2024-08-17 A 1 - 1 B\n")
    assert len(matches) == 1 and matches[0].winner is None


@pytest.mark.parametrize("text,message", [
    ("2024-08-17 A 1-1 A", "cannot play itself"),
    ("2024-08-17 A beat B", "line 1"),
    ("2024-08-17 A 1-0 B\n2024-08-17 C 2-2 A", "line 2: A already played"),
])
def test_bad_results(text, message):
    with pytest.raises(ValueError, match=message):
        parse_results(text)
