"""Units for distances, paces and speeds. Everything stored is metres and seconds; functions here convert
to the display unit ("km" or "mi") and format. They all take metres."""

from __future__ import annotations

METERS_PER_UNIT = {"km": 1000.0, "mi": 1609.344}
SPEED_LABEL = {"km": "km/h", "mi": "mph"}


def check_unit(unit: str) -> str:
    if unit not in METERS_PER_UNIT:
        raise ValueError(f"unknown unit {unit!r}; expected one of {sorted(METERS_PER_UNIT)}")
    return unit


def distance_in(meters: float, unit: str) -> float:
    """Metres as kilometres or miles."""
    return meters / METERS_PER_UNIT[check_unit(unit)]


def format_distance(meters: float, unit: str) -> str:
    return f"{distance_in(meters, unit):.2f} {unit}"


def pace_seconds(seconds: float, meters: float, unit: str) -> float:
    """Seconds per kilometre or per mile."""
    if meters <= 0:
        raise ValueError("pace needs a positive distance")
    return seconds / distance_in(meters, unit)


def speed(meters: float, seconds: float, unit: str) -> float:
    """km/h or mph."""
    if seconds <= 0:
        raise ValueError("speed needs a positive duration")
    return distance_in(meters, unit) / (seconds / 3600)


def format_duration(seconds: float) -> str:
    """3723 -> '1:02:03', 330 -> '5:30'."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def format_pace(seconds_per_unit: float, unit: str) -> str:
    return f"{format_duration(seconds_per_unit)} /{check_unit(unit)}"


def parse_duration(text: str) -> float:
    """'1:02:03', '5:30' or '42' (seconds) -> seconds."""
    parts = text.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(p.strip().replace(".", "", 1).isdigit() for p in parts):
        raise ValueError(f"bad duration {text!r}")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    return seconds
