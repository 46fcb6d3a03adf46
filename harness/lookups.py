"""The tiny text protocol a model uses to fetch context instead of editing:

    VIEW path/to/file.py          (the whole file, up to MAX_VIEW_LINES)
    VIEW path/to/file.py 10-40    (a line range)
    GREP regex                    (matching lines in every file, up to MAX_GREP_HITS)

Each request line must stand alone on its line; anything else in the reply is ignored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deltaserve.harness.prompt import render_file
from deltaserve.tools.files import grep
from deltaserve.tools.textfile import split_lines

MAX_VIEW_LINES = 200
MAX_GREP_HITS = 50

_VIEW = re.compile(r"^\s*VIEW\s+(\S+?)(?::|\s+)?(?:(\d+)\s*-\s*(\d+))?\s*$")
_GREP = re.compile(r"^\s*GREP\s+(.+?)\s*$")


@dataclass(frozen=True)
class Lookup:
    kind: str  # "view" | "grep"
    target: str  # path or regex
    start: int | None = None
    end: int | None = None

    def __str__(self) -> str:
        if self.kind == "grep":
            return f"GREP {self.target}"
        return f"VIEW {self.target}" + (f" {self.start}-{self.end}" if self.start else "")


def parse(reply: str) -> list[Lookup]:
    found = []
    for line in reply.splitlines():
        if m := _VIEW.match(line):
            start, end = (int(m.group(2)), int(m.group(3))) if m.group(2) else (None, None)
            found.append(Lookup("view", m.group(1).strip("`'\""), start, end))
        elif m := _GREP.match(line):
            found.append(Lookup("grep", m.group(1).strip("`")))
    return list(dict.fromkeys(found))


def serve(lookup: Lookup, workspace, numbered: bool = True) -> str:
    """The answer the model sees; a bad path or regex gives an explanation rather than an exception."""
    try:
        return _view(lookup, workspace, numbered) if lookup.kind == "view" else _grep(lookup, workspace)
    except (ValueError, re.error) as exc:  # WorkspaceError is a ValueError
        return f"{lookup}: {exc}"


def _view(lookup: Lookup, workspace, numbered: bool) -> str:
    lines = split_lines(workspace.read_text(lookup.target))[0]
    start = max(1, lookup.start or 1)
    end = min(len(lines), lookup.end or len(lines), start + MAX_VIEW_LINES - 1)
    body = render_file(workspace.relpath(lookup.target), "\n".join(lines[start - 1 : end]), numbered, start)
    more = f"\n(lines {start}-{end} of {len(lines)})" if (start, end) != (1, len(lines)) else ""
    return f"{lookup}:\n{body}{more}"


def _grep(lookup: Lookup, workspace) -> str:
    # "path:line: text" lines
    return f"{lookup}:\n" + grep(workspace, lookup.target, max_results=MAX_GREP_HITS)
