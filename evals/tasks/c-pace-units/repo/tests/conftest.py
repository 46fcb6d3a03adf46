import pytest

from runlog import Activity

EXPORT = {
    "name": "Sunday long run",
    "laps": [
        {"distance_km": 5, "time": "27:30", "ascent_m": 40, "hr": 150},
        {"distance_km": 5, "time": "26:40", "ascent_m": 25, "hr": 158},
        {"distance_km": 2.5, "time": "12:30", "hr": 165},
    ],
}


@pytest.fixture
def run():
    return Activity.from_export(EXPORT)
