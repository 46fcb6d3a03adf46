from leaguetable.results import Match, parse_results
from leaguetable.table import Row, Standing, build_rows, render, standings

__all__ = ["Match", "Row", "Standing", "build_rows", "parse_results", "render", "standings"]
