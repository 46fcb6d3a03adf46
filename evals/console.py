"""What the evals print on a terminal when they finish: their tables and where their files went.

Every table fits the console: a markdown table wider than the console loses columns by priority (the first,
naming the row, stays; seconds and passes go first, then counts, then ratios), with a line saying which;
report.md keeps them all.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.markdown import Markdown
from rich.table import Table

from deltaserve.evals.report import decode_table
from deltaserve.evals.results import load_rows


def print_paths(console: Console, paths: dict) -> None:
    for name, path in paths.items():
        console.print(f"{name}: {path}")


def column_priority(index: int, header: str) -> int:
    """0 is kept longest: the row's name, then ratios (`whole/udiff tok`) and savings, token counts and
    outcomes, the rest, and first to go the seconds and passes."""
    name = header.strip("* ").lower()
    if index == 0:
        return 0
    if "/" in name:
        return 1
    if name.endswith((" s", " ms", "seconds")) or "passes" in name or "ttft" in name:
        return 4
    if any(word in name for word in ("rate", "solved", "saved", "cached")):
        return 1
    if "tok" in name or "outcome" in name:
        return 2
    return 3


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _fit_table(lines: list[str], width: int) -> list[str]:
    rows = [_cells(line) for line in lines]
    header, body = rows[0], [r for i, r in enumerate(rows) if i != 1]
    if any(len(r) != len(header) for r in body):
        return lines  # not a table we can cut safely
    widths = [max(len(r[i]) for r in body) for i in range(len(header))]
    keep = list(range(len(header)))
    order = sorted(keep, key=lambda i: (column_priority(i, header[i]), i))  # dropped from the end
    # rich draws a markdown table with a space either side of each cell
    while len(keep) > 2 and sum(widths[i] for i in keep) + 2 * len(keep) + 2 > width:
        keep.remove(order.pop())
    if len(keep) == len(header):
        return lines
    fitted = ["| " + " | ".join(r[i] for i in keep) + " |" for r in rows]
    fitted[1] = "|" + "|".join(rows[1][i] or "---" for i in keep) + "|"
    dropped = ", ".join(header[i].strip("* ") for i in range(len(header)) if i not in keep)
    return [*fitted, "", f"*left out at this width: {dropped} (all in report.md)*"]


def fit_markdown(text: str, width: int) -> str:
    """`text` with each table narrowed to `width` columns where it is wider."""
    out: list[str] = []
    table: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            out += _fit_table(table, width) if len(table) >= 2 else table
            table = []
        out.append(line)
    return "\n".join(out[:-1])


def print_markdown(console: Console, text: str) -> None:
    console.print(Markdown(fit_markdown(text, console.width)))


def print_report(console: Console, paths: dict) -> None:
    """The written report.md, rendered to fit the console, then where every file went."""
    print_markdown(console, paths["report"].read_text())
    print_paths(console, paths)


def print_decode_summary(result: dict, console: Console | None = None) -> None:
    """The decode-cost eval's per-task table, its summary and where its files went."""
    console = console or Console()
    print_markdown(console, decode_table(load_rows(result["paths"]["results"])))
    table = Table(title="decode cost: summary")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in result["summary"].items():
        shown = "-" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)
        table.add_row(key, shown)
    console.print(table)
    print_paths(console, result["paths"])
