import pytest

from runlog import Activity


def test_export_is_read_in_metres_and_seconds(run):
    assert run.distance_m == 12500
    assert run.seconds == 1650 + 1600 + 750
    assert run.ascent_m == 65


def test_summary_in_km(run):
    s = run.summary("km")
    assert s["distance"] == 12.5
    assert s["pace_seconds"] == pytest.approx(320)
    assert s["speed"] == pytest.approx(11.25)


def test_summary_in_miles(run):
    s = run.summary("mi")
    assert s["distance"] == pytest.approx(7.767, abs=1e-3)
    assert s["pace_seconds"] == pytest.approx(515.0, abs=0.1)
    assert s["speed"] == pytest.approx(6.99, abs=0.01)


def test_heart_rate_is_time_weighted(run):
    assert run.average_heart_rate() == 156


def test_fastest_lap(run):
    number, lap = run.fastest_lap()
    assert number == 3 and lap.seconds == 750


def test_km_splits(run):
    splits = run.splits("km")
    assert len(splits) == 12
    assert splits[0] == pytest.approx(330) and splits[5] == pytest.approx(320)
    assert sum(splits) == pytest.approx(run.seconds - 0.5 * 300)


def test_bad_export():
    with pytest.raises(ValueError, match="lap 1"):
        Activity.from_export({"laps": [{"distance_km": 1}]})
    with pytest.raises(ValueError):
        Activity.from_export({"laps": []})
