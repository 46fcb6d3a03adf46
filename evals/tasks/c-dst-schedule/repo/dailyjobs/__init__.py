from dailyjobs.schedule import DailyJob, parse_schedule
from dailyjobs.tz import BERLIN, HELSINKI, LONDON, UTC, EuropeanZone

__all__ = ["BERLIN", "HELSINKI", "LONDON", "UTC", "DailyJob", "EuropeanZone", "parse_schedule"]
