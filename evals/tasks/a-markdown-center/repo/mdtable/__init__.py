"""Render rows as Markdown, grid, RST or HTML tables.

Column alignment: "left", "right" or "center" (also "l", "r", "c" or "<", ">", "^"), one for all columns or
one per column. Numeric columns are right-aligned unless told otherwise.
"""

from .options import ALIGNMENTS, STYLES, TableOptions, normalize_align
from .table import Table, display_width, from_csv, parse_pipe_table, render

__all__ = [
    "ALIGNMENTS",
    "STYLES",
    "Table",
    "TableOptions",
    "display_width",
    "from_csv",
    "normalize_align",
    "parse_pipe_table",
    "render",
]
