"""Code fences in model-written text (CommonMark's rules, made tolerant of what models write).

A fence line is three or more backticks or tildes, optionally indented, then an info string (the language,
sometimes a file name: ```` ```python src/a.py ````; a backtick fence's info has no backticks). A block is
closed by a line of the same character, at least as long as the opening and with nothing after it, so a
longer fence can hold shorter ones (```` ```` ```` around a ```` ``` ```` example), and indented at most 3
spaces deeper than the opening (CommonMark's rule: a Python docstring's own ```` ``` ```` lines are code),
unless only deeper ones would close it. A block left open runs to the end of the text.

Inside a unified diff a line that starts with a space is a context line, never a fence, so the diff
parser scans with `max_indent=0`; replies in the other formats may indent their fences freely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE_LINE = re.compile(r"^(?P<indent>\s*)(?P<marker>`{3,}|~{3,})(?P<info>.*)$")
_INFO_SEPARATOR = re.compile(r"[\s:]+")


@dataclass(frozen=True)
class Fence:
    marker: str  # the run of backticks or tildes
    indent: int
    info: str  # stripped; "" for a bare fence

    @property
    def words(self) -> list[str]:
        """The info string's words after the language (`python src/a.py` -> ["src/a.py"])."""
        return _INFO_SEPARATOR.split(self.info)[1:] if self.info else []

    def is_closed_by(self, line: str, max_indent: int | None = None) -> bool:
        closing = fence_line(line, max_indent)
        return (closing is not None and not closing.info and closing.marker[0] == self.marker[0]
                and len(closing.marker) >= len(self.marker))


@dataclass(frozen=True)
class FencedBlock:
    fence: Fence
    start: int  # index of the opening line
    end: int  # index of the closing line; len(lines) when the block is never closed
    body: list[str]


def fence_line(line: str, max_indent: int | None = None) -> Fence | None:
    """The fence a line opens or closes, or None. `max_indent`: how many leading spaces a fence may have
    (None: any)."""
    m = _FENCE_LINE.match(line)
    if not m:
        return None
    indent, marker, info = len(m.group("indent")), m.group("marker"), m.group("info").strip()
    if max_indent is not None and indent > max_indent:
        return None
    if marker[0] == "`" and "`" in info:
        return None  # inline code (```x```), not a fence
    return Fence(marker, indent, info)


def fenced_blocks(lines: list[str], max_indent: int | None = None) -> list[FencedBlock]:
    """Every top-level fenced block in `lines`, in order (fences inside a block are its content)."""
    blocks = []
    i = 0
    while i < len(lines):
        opening = fence_line(lines[i], max_indent)
        if opening is None:
            i += 1
            continue
        closings = [j for j in range(i + 1, len(lines)) if opening.is_closed_by(lines[j], max_indent)]
        # CommonMark's closing fence is indented at most 3 spaces more than its opening one: a deeper bare
        # fence is the code's own (a docstring's Markdown example) unless no other closes the block
        end = next((j for j in closings if fence_line(lines[j]).indent <= opening.indent + 3),
                   closings[0] if closings else len(lines))
        blocks.append(FencedBlock(opening, i, end, lines[i + 1 : end]))
        i = end + 1
    return blocks


def fence_for(lines: list[str]) -> str:
    """The shortest backtick fence that can wrap `lines` without any of them closing it."""
    longest = max((len(f.marker) for f in map(fence_line, lines) if f is not None and f.marker[0] == "`"),
                  default=2)
    return "`" * max(3, longest + 1)
