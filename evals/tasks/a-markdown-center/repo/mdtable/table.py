"""Render tabular data as text tables and read Markdown tables back.

    >>> print(render([["apple", 3, 0.5], ["kiwi", 12, 0.25]], headers=["fruit", "qty", "price"]))
    | fruit | qty | price |
    |-------|----:|------:|
    | apple |   3 |   0.5 |
    | kiwi  |  12 |  0.25 |

Input may be a list of rows (sequences), a list of dicts, or a dict of columns. Cells are formatted once
(numbers, None, booleans), measured by their display width (East Asian wide characters count as two
columns, combining marks as zero), padded to the column width according to the column's alignment, and
then laid out by one of the styles in `options.STYLES`.
"""

from __future__ import annotations

import csv
import html
import io
import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Mapping, Sequence

from .options import TableOptions, normalize_align

# -- display width ------------------------------------------------------------------------------------


def char_width(char: str) -> int:
    """Terminal columns taken by one character."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Mn", "Me", "Cf"):
        return 0
    if unicodedata.category(char) == "Cc":
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns needed to show `text`; for multi-line text, the width of its widest line."""
    return max((sum(char_width(c) for c in line) for line in text.split("\n")), default=0)


def truncate_to_width(text: str, width: int, ellipsis: str = "…") -> str:
    """Cut `text` so it fits in `width` columns, marking the cut with `ellipsis`."""
    if display_width(text) <= width:
        return text
    budget = width - display_width(ellipsis)
    kept, used = [], 0
    for char in text:
        w = char_width(char)
        if used + w > budget:
            break
        kept.append(char)
        used += w
    return "".join(kept) + ellipsis


def wrap_to_width(text: str, width: int) -> list[str]:
    """Word-wrap `text` into lines of at most `width` columns; words longer than a line are split.

    Existing newlines are kept as line breaks.
    """
    lines: list[str] = []
    for paragraph in text.split("\n"):
        current, current_width = "", 0
        for word in paragraph.split(" "):
            word_width = display_width(word)
            while word_width > width:
                # Flush what we have, then hard-split the long word.
                if current:
                    lines.append(current)
                    current, current_width = "", 0
                head, used = "", 0
                for char in word:
                    if used + char_width(char) > width:
                        break
                    head += char
                    used += char_width(char)
                lines.append(head)
                word = word[len(head):]
                word_width = display_width(word)
            if not current:
                current, current_width = word, word_width
            elif current_width + 1 + word_width <= width:
                current += " " + word
                current_width += 1 + word_width
            else:
                lines.append(current)
                current, current_width = word, word_width
        lines.append(current)
    return lines


# -- cell formatting ----------------------------------------------------------------------------------

_NUMERIC_TEXT = re.compile(r"^[+-]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?([eE][+-]?\d+)?%?$")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def looks_numeric(text: str) -> bool:
    """True for text that reads as a number: "12", "-3.5", "1,234", "4e-3", "12%"."""
    return bool(_NUMERIC_TEXT.match(text.strip()))


def format_cell(value: Any, options: TableOptions) -> str:
    """Text for one cell (not yet escaped, padded or truncated)."""
    if value is None:
        return options.missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, Decimal)):
        if isinstance(value, float) and value != value:
            return "nan"
        return format(value, options.float_format)
    return str(value)


def column_kind(values: Iterable[Any]) -> str:
    """"number" if every non-missing value is (or reads as) a number, "empty" if all missing, else "text"."""
    seen = False
    for value in values:
        if value is None or value == "":
            continue
        seen = True
        if is_number(value):
            continue
        if isinstance(value, str) and looks_numeric(value):
            continue
        return "text"
    return "number" if seen else "empty"


def escape_pipe_cell(text: str) -> str:
    """Make text safe inside a Markdown pipe table: escape '|' and turn newlines into <br>."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", "<br>")


# -- input normalization ------------------------------------------------------------------------------


@dataclass
class TableData:
    """Headers plus rows of raw values, all rows the same length."""

    headers: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    @property
    def column_count(self) -> int:
        return len(self.headers) if self.headers else max((len(r) for r in self.rows), default=0)

    def column(self, index: int) -> list[Any]:
        return [row[index] for row in self.rows]


def normalize(data: Any, headers: Sequence[str] | str | None = None) -> TableData:
    """Turn the accepted input shapes into TableData.

    headers: a list of names; "firstrow" to take them from the data; "keys" (the default for dicts) to use
    dict keys; None for no header row (renderers then omit it or, for pipe tables, leave it blank).
    """
    if isinstance(data, Mapping):
        # A dict of columns: {"name": [...], "qty": [...]}
        names = list(data)
        columns = [list(data[name]) for name in names]
        length = max((len(c) for c in columns), default=0)
        rows = [[c[i] if i < len(c) else None for c in columns] for i in range(length)]
        return _finish(rows, names if headers in (None, "keys") else headers)
    rows_in = list(data)
    if rows_in and all(isinstance(row, Mapping) for row in rows_in):
        keys: list[str] = []
        for row in rows_in:
            keys.extend(k for k in row if k not in keys)
        rows = [[row.get(k) for k in keys] for row in rows_in]
        return _finish(rows, keys if headers in (None, "keys") else headers)
    rows = [list(row) if not isinstance(row, str) else [row] for row in rows_in]
    if headers == "firstrow":
        if not rows:
            raise ValueError("headers='firstrow' needs at least one row")
        return _finish(rows[1:], [str(h) for h in rows[0]])
    if headers == "keys":
        raise ValueError("headers='keys' needs a list of dicts or a dict of columns")
    return _finish(rows, headers)


def _finish(rows: list[list[Any]], headers: Sequence[str] | None) -> TableData:
    width = max([len(r) for r in rows] + [len(headers) if headers else 0], default=0)
    padded = [row + [None] * (width - len(row)) for row in rows]
    names = [str(h) for h in headers] if headers else []
    if names and len(names) < width:
        names += [""] * (width - len(names))
    return TableData(headers=names, rows=padded)


def resolve_alignments(data: TableData, options: TableOptions) -> list[str]:
    """One alignment per column: explicit ones from options, else right for numbers and left for text."""
    count = data.column_count
    if isinstance(options.align, str):
        return [options.align] * count
    if isinstance(options.align, tuple):
        if len(options.align) != count:
            raise ValueError(f"{len(options.align)} alignments given for {count} columns")
        return list(options.align)
    return ["right" if column_kind(data.column(i)) == "number" else "left" for i in range(count)]


# -- layout -------------------------------------------------------------------------------------------


def pad(text: str, width: int, align: str) -> str:
    """Pad one line of text to `width` display columns."""
    fill = max(0, width - display_width(text))
    if align == "right":
        return " " * fill + text
    return text + " " * fill


@dataclass
class Layout:
    """Formatted cell text, column widths and alignments, ready for a style to draw."""

    headers: list[str]
    rows: list[list[str]]
    widths: list[int]
    alignments: list[str]
    options: TableOptions

    def cell_lines(self, text: str, width: int) -> list[str]:
        return text.split("\n") if text else [""]


def build_layout(data: TableData, options: TableOptions, escape: Callable[[str], str] | None = None,
                 wrap: bool = False) -> Layout:
    """Format every cell and size the columns.

    `escape` post-processes cell text (pipe tables escape '|'); `wrap` lets cells wider than
    `max_col_width` wrap onto several lines instead of being truncated.
    """
    alignments = resolve_alignments(data, options)
    limit = options.max_col_width

    def prepare(text: str) -> str:
        if escape is not None:
            text = escape(text)
        if limit is None:
            return text
        if wrap:
            return "\n".join(wrap_to_width(text, limit))
        return "\n".join(truncate_to_width(line, limit) for line in text.split("\n"))

    headers = [prepare(h) for h in data.headers] if options.show_header else []
    rows = [[prepare(format_cell(value, options)) for value in row] for row in data.rows]
    widths = []
    for index in range(data.column_count):
        cells = [row[index] for row in rows]
        if headers:
            cells.append(headers[index])
        widths.append(max((display_width(c) for c in cells), default=0))
    return Layout(headers=headers, rows=rows, widths=widths, alignments=alignments, options=options)


# -- styles -------------------------------------------------------------------------------------------


def _pipe_rule(width: int, align: str) -> str:
    """The Markdown separator cell under a header: ---, :---, ---: or :---:."""
    if align == "right":
        return "-" * (width - 1) + ":"
    return "-" * width


def render_pipe(data: TableData, options: TableOptions) -> str:
    """GitHub-flavoured Markdown table."""
    layout = build_layout(data, options, escape=escape_pipe_cell)
    pad_text = " " * options.padding
    # Markdown needs at least three dashes in each separator cell.
    widths = [max(w, 3) for w in layout.widths]

    def line(cells: Sequence[str]) -> str:
        inner = [f"{pad_text}{pad(c, w, a)}{pad_text}" for c, w, a in zip(cells, widths, layout.alignments)]
        return "|" + "|".join(inner) + "|"

    headers = layout.headers or [""] * len(widths)
    rule = "|" + "|".join(_pipe_rule(w + 2 * options.padding, a) for w, a in zip(widths, layout.alignments)) + "|"
    out = [line(headers), rule]
    out.extend(line(row) for row in layout.rows)
    return "\n".join(out)


def _grid_border(widths: Sequence[int], padding: int, char: str = "-") -> str:
    return "+" + "+".join(char * (w + 2 * padding) for w in widths) + "+"


def render_grid(data: TableData, options: TableOptions) -> str:
    """Box table with +---+ borders; cells wider than max_col_width wrap onto more lines."""
    layout = build_layout(data, options, wrap=True)
    pad_text = " " * options.padding

    def block(cells: Sequence[str]) -> list[str]:
        split = [layout.cell_lines(c, w) for c, w in zip(cells, layout.widths)]
        height = max((len(s) for s in split), default=1)
        lines = []
        for i in range(height):
            parts = [
                pad_text + pad(s[i] if i < len(s) else "", w, a) + pad_text
                for s, w, a in zip(split, layout.widths, layout.alignments)
            ]
            lines.append("|" + "|".join(parts) + "|")
        return lines

    border = _grid_border(layout.widths, options.padding)
    out = [border]
    if layout.headers:
        out.extend(block(layout.headers))
        out.append(_grid_border(layout.widths, options.padding, "="))
    for index, row in enumerate(layout.rows):
        out.extend(block(row))
        out.append(border)
    if not layout.rows and layout.headers:
        out[-1] = border
    return "\n".join(out)


def render_simple(data: TableData, options: TableOptions) -> str:
    """Space-separated columns with a dashed rule under the header (like `tabulate`'s simple)."""
    layout = build_layout(data, options)
    gap = " " * max(2, 2 * options.padding)

    def line(cells: Sequence[str]) -> str:
        return gap.join(pad(c, w, a) for c, w, a in zip(cells, layout.widths, layout.alignments)).rstrip()

    out = []
    if layout.headers:
        out.append(line(layout.headers))
        out.append(gap.join("-" * w for w in layout.widths))
    out.extend(line(row) for row in layout.rows)
    return "\n".join(out)


def render_plain(data: TableData, options: TableOptions) -> str:
    """Aligned columns without any rules."""
    layout = build_layout(data, options)
    gap = " " * max(2, 2 * options.padding)
    rows = ([layout.headers] if layout.headers else []) + layout.rows
    return "\n".join(
        gap.join(pad(c, w, a) for c, w, a in zip(row, layout.widths, layout.alignments)).rstrip()
        for row in rows
    )


def render_rst(data: TableData, options: TableOptions) -> str:
    """reStructuredText simple table (===== rules)."""
    layout = build_layout(data, options)
    widths = [max(w, 1) for w in layout.widths]
    rule = "  ".join("=" * w for w in widths)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(pad(c, w, a) for c, w, a in zip(cells, widths, layout.alignments)).rstrip()

    out = [rule]
    if layout.headers:
        out.extend([line(layout.headers), rule])
    out.extend(line(row) for row in layout.rows)
    out.append(rule)
    return "\n".join(out)


def render_html(data: TableData, options: TableOptions) -> str:
    """An HTML <table>; alignment becomes a style attribute on every cell."""
    layout = build_layout(data, options, escape=html.escape)

    def cells(tag: str, values: Sequence[str]) -> str:
        parts = []
        for value, align in zip(values, layout.alignments):
            style = f' style="text-align: {align}"' if align != "left" else ""
            parts.append(f"<{tag}{style}>{value.replace(chr(10), '<br>')}</{tag}>")
        return "".join(parts)

    out = ["<table>"]
    if layout.headers:
        out.append(f"<thead><tr>{cells('th', layout.headers)}</tr></thead>")
    out.append("<tbody>")
    out.extend(f"<tr>{cells('td', row)}</tr>" for row in layout.rows)
    out.append("</tbody>")
    out.append("</table>")
    return "\n".join(out)


_BOX = {
    "top": ("┌", "┬", "┐"),
    "head": ("╞", "╪", "╡"),
    "middle": ("├", "┼", "┤"),
    "bottom": ("└", "┴", "┘"),
}


def render_box(data: TableData, options: TableOptions, separate_rows: bool = False) -> str:
    """Table drawn with Unicode box characters, for terminals; multi-line cells are supported."""
    layout = build_layout(data, options, wrap=True)
    pad_text = " " * options.padding

    def rule(kind: str) -> str:
        left, cross, right = _BOX[kind]
        fill = "═" if kind == "head" else "─"
        return left + cross.join(fill * (w + 2 * options.padding) for w in layout.widths) + right

    def block(cells: Sequence[str]) -> list[str]:
        split = [layout.cell_lines(c, w) for c, w in zip(cells, layout.widths)]
        height = max((len(s) for s in split), default=1)
        return [
            "│" + "│".join(pad_text + pad(s[i] if i < len(s) else "", w, a) + pad_text
                          for s, w, a in zip(split, layout.widths, layout.alignments)) + "│"
            for i in range(height)
        ]

    out = [rule("top")]
    if layout.headers:
        out.extend(block(layout.headers))
        out.append(rule("head"))
    for index, row in enumerate(layout.rows):
        if separate_rows and index:
            out.append(rule("middle"))
        out.extend(block(row))
    out.append(rule("bottom"))
    return "\n".join(out)


RENDERERS: dict[str, Callable[[TableData, TableOptions], str]] = {
    "box": render_box,
    "pipe": render_pipe,
    "grid": render_grid,
    "simple": render_simple,
    "plain": render_plain,
    "rst": render_rst,
    "html": render_html,
}


def render(data: Any, headers: Sequence[str] | str | None = None, **options: Any) -> str:
    """Render `data` as a table. Options are TableOptions fields: style, align, max_col_width, ..."""
    opts = options.pop("options", None) or TableOptions.from_kwargs(**options)
    table = data if isinstance(data, TableData) else normalize(data, headers)
    return RENDERERS[opts.style](table, opts)


# -- a builder for incremental use --------------------------------------------------------------------


class Table:
    """Collect rows, then render; keeps column names, per-column alignment and an optional totals row.

        t = Table(["item", "qty"], align={"qty": "right"})
        t.add_row("bolts", 120)
        t.add_total("qty")
        print(t.render())
    """

    def __init__(self, columns: Sequence[str], align: Mapping[str, str] | None = None):
        if len(set(columns)) != len(columns):
            raise ValueError("column names must be unique")
        self.columns = list(columns)
        self.rows: list[list[Any]] = []
        self._align: dict[str, str] = {}
        self._totals: list[str] = []
        for name, value in (align or {}).items():
            self.set_align(name, value)

    def _index(self, column: str) -> int:
        try:
            return self.columns.index(column)
        except ValueError:
            raise KeyError(f"no column {column!r}; columns are {self.columns}") from None

    def set_align(self, column: str, align: str) -> None:
        self._index(column)
        self._align[column] = normalize_align(align)

    def add_row(self, *values: Any, **named: Any) -> None:
        """Add a row by position, by column name, or both (names win)."""
        if len(values) > len(self.columns):
            raise ValueError(f"row has {len(values)} values for {len(self.columns)} columns")
        row = list(values) + [None] * (len(self.columns) - len(values))
        for name, value in named.items():
            row[self._index(name)] = value
        self.rows.append(row)

    def add_rows(self, rows: Iterable[Sequence[Any] | Mapping[str, Any]]) -> None:
        for row in rows:
            if isinstance(row, Mapping):
                self.add_row(**row)
            else:
                self.add_row(*row)

    def add_column(self, name: str, values: Sequence[Any] | None = None, align: str | None = None) -> None:
        if name in self.columns:
            raise ValueError(f"column {name!r} already exists")
        values = list(values or [])
        if len(values) > len(self.rows):
            raise ValueError("more values than rows")
        self.columns.append(name)
        for index, row in enumerate(self.rows):
            row.append(values[index] if index < len(values) else None)
        if align is not None:
            self.set_align(name, align)

    def sort_by(self, column: str, reverse: bool = False) -> None:
        """Sort rows by a column; missing values go last either way."""
        index = self._index(column)
        present = [r for r in self.rows if r[index] is not None]
        missing = [r for r in self.rows if r[index] is None]
        present.sort(key=lambda r: r[index], reverse=reverse)
        self.rows = present + missing

    def add_total(self, *columns: str) -> None:
        """Append a totals row summing these numeric columns when rendering."""
        for column in columns:
            self._index(column)
            if column not in self._totals:
                self._totals.append(column)

    def totals(self) -> list[Any]:
        row: list[Any] = [None] * len(self.columns)
        for column in self._totals:
            index = self._index(column)
            numbers = [r[index] for r in self.rows if is_number(r[index])]
            row[index] = sum(numbers) if numbers else None
        if self._totals and row[0] is None:
            row[0] = "Total"
        return row

    def _alignments(self, data: TableData) -> tuple[str, ...] | None:
        if not self._align:
            return None
        auto = resolve_alignments(data, TableOptions())
        return tuple(self._align.get(name, auto[i]) for i, name in enumerate(self.columns))

    def to_data(self) -> TableData:
        rows = [list(r) for r in self.rows]
        if self._totals:
            rows.append(self.totals())
        return TableData(headers=list(self.columns), rows=rows)

    def render(self, style: str = "pipe", **options: Any) -> str:
        data = self.to_data()
        if "align" not in options:
            options["align"] = self._alignments(data)
        return render(data, options=TableOptions.from_kwargs(style=style, **options))

    def __str__(self) -> str:
        return self.render()

    def __len__(self) -> int:
        return len(self.rows)


# -- reading tables back ------------------------------------------------------------------------------

_RULE_CELL = re.compile(r"^\s*(:?)-+(:?)\s*$")


def _split_pipe_row(line: str) -> list[str]:
    """Cells of one Markdown table row, honouring \\| escapes; outer pipes are optional."""
    text = line.strip()
    if text.startswith("|"):
        text = text[1:]
    if text.endswith("|") and not text.endswith("\\|"):
        text = text[:-1]
    cells, current, index = [], [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in "|\\":
            current.append(text[index + 1])
            index += 2
            continue
        if char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
        index += 1
    cells.append("".join(current).strip())
    return [cell.replace("<br>", "\n") for cell in cells]


def _rule_alignment(cell: str) -> str | None:
    match = _RULE_CELL.match(cell)
    if not match:
        return None
    left, right = match.groups()
    if left and right:
        return "center"
    if right:
        return "right"
    return "left"


def parse_pipe_table(text: str) -> tuple[list[str], list[list[str]], list[str]]:
    """Read a Markdown pipe table: returns (headers, rows, alignments).

    Lines before the header and after the last row are ignored; a ValueError is raised if no header
    plus separator pair is found. Short rows are padded with "" and long rows are cut to the header.
    """
    lines = [line for line in text.splitlines()]
    for index in range(len(lines) - 1):
        if "|" not in lines[index]:
            continue
        rule_cells = _split_pipe_row(lines[index + 1])
        alignments = [_rule_alignment(cell) for cell in rule_cells]
        if not alignments or any(a is None for a in alignments):
            continue
        headers = _split_pipe_row(lines[index])
        if len(headers) != len(alignments):
            continue
        rows = []
        for line in lines[index + 2:]:
            if "|" not in line or not line.strip():
                break
            cells = _split_pipe_row(line)
            cells = (cells + [""] * len(headers))[: len(headers)]
            rows.append(cells)
        return headers, rows, [a for a in alignments if a is not None]
    raise ValueError("no Markdown table found (need a header row followed by a |---| separator row)")


def table_from_markdown(text: str) -> Table:
    """A Table (with the alignments of the source) from Markdown text."""
    headers, rows, alignments = parse_pipe_table(text)
    table = Table(headers)
    for name, align in zip(headers, alignments):
        table.set_align(name, align)
    table.add_rows(rows)
    return table


def from_csv(text: str, headers: bool = True, dialect: str | None = None,
             convert_numbers: bool = True) -> TableData:
    """TableData from CSV text; the dialect is sniffed unless given, numbers are converted unless disabled."""
    sample = text[:4096]
    if dialect is None:
        try:
            sniffed = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            sniffed = csv.excel
        reader = csv.reader(io.StringIO(text), sniffed)
    else:
        reader = csv.reader(io.StringIO(text), dialect=dialect)
    rows = [row for row in reader if row]
    if convert_numbers:
        rows = [[_convert_number(cell) for cell in row] for row in rows]
    if headers:
        if not rows:
            raise ValueError("CSV is empty; expected a header row")
        return _finish(rows[1:], [str(h) for h in rows[0]])
    return _finish(rows, None)


def _convert_number(cell: str) -> Any:
    text = cell.strip()
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text):
        return float(text)
    return cell


def reformat_markdown(document: str) -> str:
    """Re-align every pipe table in a Markdown document, keeping each column's alignment.

    Text outside tables is returned unchanged; tables inside fenced code blocks are left alone.
    """
    lines = document.split("\n")
    out: list[str] = []
    index = 0
    in_fence = False
    while index < len(lines):
        line = lines[index]
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or "|" not in line or index + 1 >= len(lines):
            out.append(line)
            index += 1
            continue
        end = index + 2
        while end < len(lines) and "|" in lines[end] and lines[end].strip():
            end += 1
        try:
            headers, rows, alignments = parse_pipe_table("\n".join(lines[index:end]))
        except ValueError:
            out.append(line)
            index += 1
            continue
        indent = line[: len(line) - len(line.lstrip())]
        table = render(rows, headers=headers, align=tuple(alignments))
        out.extend(indent + row for row in table.split("\n"))
        index = end
    return "\n".join(out)


def transpose(data: TableData, header_column: int = 0) -> TableData:
    """Swap rows and columns; the values of `header_column` become the new headers."""
    if not data.rows:
        return TableData(headers=[], rows=[[h] for h in data.headers])
    new_headers = [data.headers[header_column] if data.headers else ""]
    new_headers += [format_cell(row[header_column], TableOptions()) for row in data.rows]
    new_rows = []
    for index in range(data.column_count):
        if index == header_column:
            continue
        name = data.headers[index] if data.headers else ""
        new_rows.append([name] + [row[index] for row in data.rows])
    return TableData(headers=new_headers, rows=new_rows)


def describe(data: TableData) -> TableData:
    """Summary table: count, missing, min, max and mean of every numeric column."""
    out_rows = []
    for index in range(data.column_count):
        values = data.column(index)
        numbers = [v for v in values if is_number(v)]
        name = data.headers[index] if data.headers else str(index)
        if column_kind(values) != "number" or not numbers:
            continue
        mean = sum(numbers) / len(numbers)
        out_rows.append([name, len(numbers), values.count(None), min(numbers), max(numbers), mean])
    return TableData(headers=["column", "count", "missing", "min", "max", "mean"], rows=out_rows)


def to_csv(data: TableData, options: TableOptions | None = None, delimiter: str = ",") -> str:
    """CSV text with formatted cells (the same text the table styles would show)."""
    opts = options or TableOptions()
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    if data.headers:
        writer.writerow(data.headers)
    for row in data.rows:
        writer.writerow([format_cell(value, opts) for value in row])
    return buffer.getvalue()
