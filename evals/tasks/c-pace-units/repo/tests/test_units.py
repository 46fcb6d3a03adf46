import pytest

from runlog import units


def test_distances():
    assert units.distance_in(5000, "km") == 5
    assert units.format_distance(1609.344, "mi") == "1.00 mi"
    assert units.format_distance(12500, "km") == "12.50 km"


def test_pace_and_speed():
    assert units.pace_seconds(1650, 5000, "km") == 330
    assert units.format_pace(330, "km") == "5:30 /km"
    assert units.speed(10000, 3600, "km") == 10
    assert round(units.speed(1609.344, 360, "mi"), 6) == 10


@pytest.mark.parametrize("text,seconds", [("1:02:03", 3723), ("5:30", 330), ("42", 42), ("0:59.5", 59.5)])
def test_parse_duration(text, seconds):
    assert units.parse_duration(text) == seconds
    assert units.format_duration(3723) == "1:02:03"


@pytest.mark.parametrize("bad", ["", "1:2:3:4", "a:30"])
def test_bad_duration(bad):
    with pytest.raises(ValueError):
        units.parse_duration(bad)


def test_unknown_unit():
    with pytest.raises(ValueError):
        units.distance_in(1, "furlong")
