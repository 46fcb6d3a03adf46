"""What the evals print on a terminal when they finish: their tables and where their files went."""

from __future__ import annotations

from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from deltaserve.evals.report import decode_table
from deltaserve.evals.results import load_rows


def print_paths(console: Console, paths: dict) -> None:
    for name, path in paths.items():
        console.print(f"{name}: {path}")


def print_report(console: Console, paths: dict) -> None:
    """The written report.md, rendered, then where every file went."""
    console.print(Markdown(paths["report"].read_text()))
    print_paths(console, paths)


def print_decode_summary(result: dict, console: Console | None = None) -> None:
    """The decode-cost eval's per-task table, its summary and where its files went."""
    console = console or Console()
    console.print(Markdown(decode_table(load_rows(result["paths"]["results"]))))
    table = Table(title="decode cost: summary")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result["summary"].items():
        shown = "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)
        table.add_row(key, shown)
    console.print(table)
    print_paths(console, result["paths"])
