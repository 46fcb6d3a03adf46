"""An activity is a list of laps, each with its distance in metres and time in seconds.

Exports from the watch app give lap distances in kilometres and times as "m:ss"; `Activity.from_export`
converts them once, on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runlog import units


@dataclass(frozen=True)
class Lap:
    distance_m: float
    seconds: float
    ascent_m: float = 0.0
    heart_rate: int | None = None

    def __post_init__(self) -> None:
        if self.distance_m < 0 or self.seconds <= 0:
            raise ValueError("a lap needs a non-negative distance and a positive time")


@dataclass
class Activity:
    name: str
    laps: list[Lap] = field(default_factory=list)
    sport: str = "run"

    @classmethod
    def from_export(cls, data: dict[str, Any]) -> Activity:
        laps = []
        for number, raw in enumerate(data.get("laps", []), start=1):
            try:
                laps.append(Lap(
                    distance_m=float(raw["distance_km"]) * 1000,
                    seconds=units.parse_duration(str(raw["time"])),
                    ascent_m=float(raw.get("ascent_m", 0)),
                    heart_rate=int(raw["hr"]) if raw.get("hr") is not None else None,
                ))
            except (KeyError, ValueError) as exc:
                raise ValueError(f"lap {number}: {exc}") from exc
        if not laps:
            raise ValueError("an activity needs at least one lap")
        return cls(data.get("name", "Untitled"), laps, data.get("sport", "run"))

    @property
    def distance_m(self) -> float:
        return sum(lap.distance_m for lap in self.laps)

    @property
    def seconds(self) -> float:
        return sum(lap.seconds for lap in self.laps)

    @property
    def ascent_m(self) -> float:
        return sum(lap.ascent_m for lap in self.laps)

    def average_heart_rate(self) -> int | None:
        """Time-weighted over the laps that have one."""
        timed = [(lap.heart_rate, lap.seconds) for lap in self.laps if lap.heart_rate is not None]
        if not timed:
            return None
        return round(sum(hr * s for hr, s in timed) / sum(s for _, s in timed))

    def fastest_lap(self, min_distance_m: float = 200.0) -> tuple[int, Lap]:
        """(1-based number, lap) of the lap with the best pace among laps of at least `min_distance_m`."""
        candidates = [(n, lap) for n, lap in enumerate(self.laps, start=1) if lap.distance_m >= min_distance_m]
        if not candidates:
            raise ValueError(f"no lap of at least {min_distance_m} m")
        return min(candidates, key=lambda item: item[1].seconds / item[1].distance_m)

    def splits(self, unit: str = "km") -> list[float]:
        """Seconds for each whole kilometre (or mile), assuming an even pace within each lap."""
        split_m = units.METERS_PER_UNIT[units.check_unit(unit)]
        splits: list[float] = []
        carried_m, carried_s = 0.0, 0.0
        for lap in self.laps:
            remaining_m, rate = lap.distance_m, lap.seconds / lap.distance_m if lap.distance_m else 0.0
            while carried_m + remaining_m >= split_m:
                needed = split_m - carried_m
                splits.append(carried_s + needed * rate)
                remaining_m -= needed
                carried_m, carried_s = 0.0, 0.0
            carried_m += remaining_m
            carried_s += remaining_m * rate
        return splits

    def summary(self, unit: str = "km") -> dict[str, Any]:
        distance, seconds = units.distance_in(self.distance_m, unit), self.seconds
        return {
            "name": self.name,
            "distance": distance,
            "seconds": seconds,
            "pace_seconds": units.pace_seconds(seconds, distance, unit),
            "speed": units.speed(distance, seconds, unit),
            "ascent_m": self.ascent_m,
            "heart_rate": self.average_heart_rate(),
            "unit": unit,
        }
