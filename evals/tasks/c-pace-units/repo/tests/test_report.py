from runlog import render_laps, render_summary
from runlog.report import render_csv, render_splits


def test_summary_report_in_km(run):
    text = render_summary(run, "km")
    assert text.splitlines() == [
        "Sunday long run",
        "  distance  12.50 km",
        "  time      1:06:40",
        "  pace      5:20 /km",
        "  speed     11.2 km/h",
        "  ascent    65 m",
        "  heart     156 bpm",
    ]


def test_summary_report_in_miles(run):
    lines = render_summary(run, "mi").splitlines()
    assert lines[1] == "  distance  7.77 mi"
    assert lines[3] == "  pace      8:35 /mi"
    assert lines[4] == "  speed     7.0 mph"


def test_lap_table(run):
    rows = [row.split() for row in render_laps(run, "km").splitlines()]
    assert rows[0] == ["lap", "distance", "time", "pace"]
    assert rows[1] == ["1", "5.00", "km", "27:30", "5:30", "/km"]
    assert rows[2] == ["2", "5.00", "km", "26:40", "5:20", "/km"]
    assert rows[3] == ["3", "2.50", "km", "12:30", "5:00", "/km", "*"]


def test_lap_table_in_miles(run):
    rows = [row.split() for row in render_laps(run, "mi").splitlines()]
    assert rows[1][:3] == ["1", "3.11", "mi"] and rows[1][4:6] == ["8:51", "/mi"]


def test_splits_line(run):
    assert render_splits(run, "km").startswith("1:5:30  2:5:30")


def test_csv_export(run):
    rows = render_csv(run, "km").splitlines()
    assert rows[0] == "lap,distance_km,seconds,pace_s_per_km,ascent_m,heart_rate"
    assert rows[1] == "1,5.0,1650.0,330.0,40,150"
    assert rows[3] == "3,2.5,750.0,300.0,0,165"
