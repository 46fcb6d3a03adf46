"""Rendering options, validated once so the renderers can trust them."""

from __future__ import annotations

from dataclasses import dataclass, fields

ALIGNMENTS = ("left", "right")
STYLES = ("pipe", "grid", "box", "simple", "plain", "rst", "html")

_ALIGN_ALIASES = {"l": "left", "<": "left", "r": "right", ">": "right", "c": "center", "^": "center"}


def normalize_align(value: str) -> str:
    """Full alignment name for `value` ("r" -> "right"); ValueError if unknown."""
    if not isinstance(value, str):
        raise TypeError(f"alignment must be a string, got {type(value).__name__}")
    key = value.strip().lower()
    key = _ALIGN_ALIASES.get(key, key)
    if key not in ALIGNMENTS:
        raise ValueError(f"unknown alignment {value!r}; use one of {', '.join(ALIGNMENTS)}")
    return key


@dataclass(frozen=True)
class TableOptions:
    """How to render a table.

    align: None (auto: numbers right, text left), one alignment for every column, or one per column
        (a sequence, or a string of one-letter codes such as "lrc").
    max_col_width: wrap (grid) or truncate (other styles) cells wider than this many columns.
    float_format: format spec applied to floats and Decimals, e.g. ".2f" or ",.1f".
    missing: text shown for None.
    """

    style: str = "pipe"
    align: str | tuple[str, ...] | None = None
    max_col_width: int | None = None
    float_format: str = "g"
    missing: str = ""
    padding: int = 1
    show_header: bool = True

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(f"unknown style {self.style!r}; use one of {', '.join(STYLES)}")
        if self.align is not None:
            object.__setattr__(self, "align", self._normalize_align_option(self.align))
        if self.max_col_width is not None and self.max_col_width < 3:
            raise ValueError("max_col_width must be at least 3")
        if self.padding < 0:
            raise ValueError("padding cannot be negative")
        format(1.5, self.float_format)  # fail now, not halfway through rendering

    @staticmethod
    def _normalize_align_option(align) -> str | tuple[str, ...]:
        if isinstance(align, str):
            if align.strip().lower() in ALIGNMENTS or align.strip().lower() in _ALIGN_ALIASES:
                return normalize_align(align)
            # A string of one-letter codes, one per column: "lrc".
            return tuple(normalize_align(code) for code in align)
        return tuple(normalize_align(item) for item in align)

    @classmethod
    def from_kwargs(cls, **kwargs) -> TableOptions:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(f"unknown table option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**kwargs)
