from runlog.activity import Activity, Lap
from runlog.report import render_laps, render_summary

__all__ = ["Activity", "Lap", "render_laps", "render_summary"]
