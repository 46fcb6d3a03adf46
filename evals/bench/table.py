"""The plain-text table every benchmark prints its side-by-side figures in."""

from __future__ import annotations


def cell(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.2f}"


def table(title: str, header: list[str], rows: list[list]) -> str:
    """Left-aligned headers over right-aligned cells; ints with thousands separators, floats with two
    decimals."""
    cells = [header] + [[cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells[1:]]
    return "\n".join(lines)
