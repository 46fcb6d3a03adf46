"""Code blocks that carry one file each, however a model names the file: alone on the line above the fence
(`src/a.py`, `**src/a.py**`, `File: src/a.py`), in the fence's info string (```` ```python src/a.py ````),
or as the block's first line (`src/a.py` or a comment `# src/a.py`), which is then not part of the content
(nor is a fence opened right after it: "```", the path, "```python", the code, "```").
Blocks naming no file are skipped: they are prose, not edits."""

from __future__ import annotations

import re
from dataclasses import dataclass

from deltaserve.tools.diff_parse import looks_like_path, path_in_info
from deltaserve.tools.fences import fence_line, fenced_blocks

# a comment that names a file: `# src/a.py`, `// src/a.js`, `-- q.sql`, `<!-- page.html -->`
_COMMENT = re.compile(r"^\s*(?:#+|//+|--|/\*|<!--)\s*(?P<rest>.*?)\s*(?:\*/|-->)?\s*$")


@dataclass(frozen=True)
class NamedBlock:
    path: str
    content: str  # the block's lines, each ending in "\n"
    start: int  # index of the opening fence line


def _first_line_path(body: list[str]) -> str | None:
    if not body:
        return None
    line = body[0]
    m = _COMMENT.match(line)
    return looks_like_path(m.group("rest") if m else line)


def named_blocks(text: str) -> list[NamedBlock]:
    """Every fenced block of `text` that names its file, in order."""
    lines = text.replace("\r\n", "\n").split("\n")
    found = []
    for block in fenced_blocks(lines):
        above = next((lines[j] for j in range(block.start - 1, -1, -1) if lines[j].strip()), "")
        named = looks_like_path(above) or path_in_info(block.fence)
        inside = _first_line_path(block.body)
        body = block.body
        if inside is not None and (named is None or inside == named):
            named, body = inside, body[1:]
            if body and fence_line(body[0]) is not None and fence_line(body[0]).info:
                body = body[1:]  # the path in a fence of its own, then the code's fence opened inside it
        if named is not None:
            found.append(NamedBlock(named, "".join(line + "\n" for line in body), block.start))
    return found
