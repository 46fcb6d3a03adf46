from crontab_lite.cron import CronError, CronExpression, parse

__all__ = ["CronError", "CronExpression", "parse"]
