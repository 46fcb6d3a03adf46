"""Plain-text reports: a summary block and a lap table."""

from __future__ import annotations

import csv
import io

from runlog import units
from runlog.activity import Activity


def render_summary(activity: Activity, unit: str = "km") -> str:
    summary = activity.summary(unit)
    lines = [
        activity.name,
        f"  distance  {units.format_distance(summary['distance'], unit)}",
        f"  time      {units.format_duration(summary['seconds'])}",
        f"  pace      {units.format_pace(summary['pace_seconds'], unit)}",
        f"  speed     {summary['speed']:.1f} {units.SPEED_LABEL[unit]}",
    ]
    if summary["ascent_m"]:
        lines.append(f"  ascent    {summary['ascent_m']:.0f} m")
    if summary["heart_rate"] is not None:
        lines.append(f"  heart     {summary['heart_rate']} bpm")
    return "\n".join(lines)


def render_laps(activity: Activity, unit: str = "km") -> str:
    """One row per lap: number, distance, time, pace; the fastest lap is starred."""
    try:
        fastest, _ = activity.fastest_lap()
    except ValueError:
        fastest = 0
    rows = [f"{'lap':>3}  {'distance':>10}  {'time':>7}  {'pace':>10}"]
    for number, lap in enumerate(activity.laps, start=1):
        distance = units.distance_in(lap.distance_m, unit)
        pace = "-"
        if distance:
            pace = units.format_pace(units.pace_seconds(lap.seconds, distance, unit), unit)
        rows.append(
            f"{number:>3}  {units.format_distance(distance, unit):>10}  "
            f"{units.format_duration(lap.seconds):>7}  {pace:>10}" + (" *" if number == fastest else "")
        )
    return "\n".join(rows)


def render_splits(activity: Activity, unit: str = "km") -> str:
    return "  ".join(f"{n}:{units.format_duration(s)}" for n, s in enumerate(activity.splits(unit), start=1))


def render_csv(activity: Activity, unit: str = "km") -> str:
    """Laps as CSV for spreadsheets: raw numbers in the display unit, no formatting."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["lap", f"distance_{unit}", "seconds", f"pace_s_per_{unit}", "ascent_m", "heart_rate"])
    for number, lap in enumerate(activity.laps, start=1):
        pace = units.pace_seconds(lap.seconds, lap.distance_m, unit) if lap.distance_m else ""
        writer.writerow([
            number,
            round(units.distance_in(lap.distance_m, unit), 3),
            round(lap.seconds, 1),
            round(pace, 1) if pace != "" else "",
            round(lap.ascent_m),
            lap.heart_rate if lap.heart_rate is not None else "",
        ])
    return buffer.getvalue()
