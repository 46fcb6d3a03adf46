"""Read-only file tools over a Workspace: view (numbered, windowed), list_files (.gitignore-aware), grep.

Output is text written for a model: line numbers match what patch errors and @@ headers use (1-based),
and every cut says what was cut and how to see more.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from deltaserve.tools.textfile import decode, is_binary, split_lines
from deltaserve.tools.workspace import Workspace, WorkspaceError

MAX_VIEW_LINES = 400
MAX_LINE_CHARS = 500
MAX_GREP_RESULTS = 100
MAX_GREP_FILE_BYTES = 2_000_000
SKIP_DIRS = {".git", ".hg", ".svn"}


def view(ws: Workspace, path: str, start: int | None = None, end: int | None = None,
         max_lines: int = MAX_VIEW_LINES) -> str:
    """Lines start..end (1-based, inclusive) of a text file as "  12 | text", with notes of what is above and
    below. Without start/end: the first `max_lines` lines."""
    rel = ws.relpath(path)
    lines, _ = split_lines(ws.read_text(rel))
    total = len(lines)
    if total == 0:
        return f"{rel} (empty file)"
    first = 1 if start is None else start
    last = (first + max_lines - 1) if end is None else end
    if first < 1 or last < first:
        raise WorkspaceError(f"invalid line range {start}..{end}: use 1-based start <= end")
    if first > total:
        raise WorkspaceError(f"{rel} has only {total} lines; start={first} is past the end")
    last = min(last, total, first + max_lines - 1)
    width = len(str(last))
    out = [f"{rel} (lines {first}-{last} of {total})"]
    if first > 1:
        out.append(f"[{first - 1} lines above not shown]")
    for i in range(first, last + 1):
        line = lines[i - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more chars]"
        out.append(f"{i:>{width}} | {line}")
    if last < total:
        out.append(f"[{total - last} lines below not shown; view with start={last + 1}]")
    return "\n".join(out)


class _Ignore:
    """The .gitignore rules that apply: the root's and every nested one, each relative to its directory."""

    def __init__(self, root: Path):
        self.root = root
        self.specs: dict[str, pathspec.PathSpec] = {}

    def load_dir(self, rel_dir: str) -> None:
        gi = self.root / rel_dir / ".gitignore" if rel_dir else self.root / ".gitignore"
        if gi.is_file():
            try:
                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                return
            self.specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(lines)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = False
        # Deeper .gitignore files override shallower ones, as in git.
        for base in sorted(self.specs, key=len):
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1 :] if base else rel
            res = self.specs[base].check_file(sub + "/" if is_dir else sub)
            if res.include is not None:
                verdict = bool(res.include)
        return verdict


def iter_files(ws: Workspace, pattern: str | None = None) -> Iterator[str]:
    """Workspace-relative paths of files, sorted per directory, skipping .git and .gitignore'd paths.
    `pattern` uses gitignore glob syntax: "*.py" matches at any depth, "src/*.py" only under src/."""
    want = pathspec.GitIgnoreSpec.from_lines([pattern]) if pattern else None
    ignore = _Ignore(ws.root)
    for dirpath, dirnames, filenames in os.walk(ws.root):
        rel_dir = os.path.relpath(dirpath, ws.root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        ignore.load_dir(rel_dir)
        keep = []
        for d in sorted(dirnames):
            rel = f"{rel_dir}/{d}" if rel_dir else d
            skipped = d.casefold() in SKIP_DIRS or os.path.islink(os.path.join(dirpath, d))
            if skipped or ignore.ignored(rel, True):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = f"{rel_dir}/{f}" if rel_dir else f
            if ignore.ignored(rel, False):
                continue
            if want is not None and not want.match_file(rel):
                continue
            if f.casefold() == ".git":  # a submodule's gitlink: the tools never read .git
                continue
            if not _regular_file(ws, rel, os.path.join(dirpath, f)):
                continue
            yield rel


def _regular_file(ws: Workspace, rel: str, full: str) -> bool:
    """A plain file in a walked (not symlinked) directory is inside the workspace: one lstat decides. A
    symlink is kept only if it resolves to a regular file inside; FIFOs are dropped (a read would block)."""
    try:
        mode = os.lstat(full).st_mode
    except OSError:
        return False
    if not stat.S_ISLNK(mode):
        return stat.S_ISREG(mode)
    try:
        return ws.exists(rel)
    except WorkspaceError:
        return False


def list_files(ws: Workspace, pattern: str | None = None, max_results: int | None = None) -> list[str]:
    """Sorted workspace-relative file paths (see iter_files), at most `max_results`."""
    out = sorted(iter_files(ws, pattern))
    return out if max_results is None else out[:max_results]


@dataclass(frozen=True)
class LineMatch:
    path: str  # workspace-relative
    number: int  # 1-based, as view() and patch errors count
    line: str
    match: re.Match[str]


# Regex constructs that see past a line's ends (\A, \Z, negative lookarounds) or never give back what they
# took (atomic groups, possessive quantifiers): with them a line can match alone but not inside its file.
_LINE_BOUND = re.compile(r"\\[AZz]|\(\?<?!|\(\?>|[*+?}]\+")


class LineSearch:
    """Every line matching `rx`, file by file in iter_files order; binary files are skipped, and so are files
    over MAX_GREP_FILE_BYTES (counted in `skipped`). A file is ruled out by one search of its whole text
    (MULTILINE) when the regex allows it, before it is split into lines: a repository of thousands of files
    is searched in a second or two."""

    def __init__(self, ws: Workspace, rx: re.Pattern[str], path_glob: str | None = None):
        self.ws, self.rx, self.path_glob = ws, rx, path_glob
        self.skipped = 0
        bounded = _LINE_BOUND.search(rx.pattern)
        self._whole_text = None if bounded else re.compile(rx.pattern, rx.flags | re.MULTILINE)

    def __iter__(self) -> Iterator[LineMatch]:
        for rel in iter_files(self.ws, self.path_glob):
            text = self._text(rel)
            if text is None or (self._whole_text and not self._whole_text.search(text.replace("\r\n", "\n"))):
                continue
            for number, line in enumerate(split_lines(text)[0], 1):
                match = self.rx.search(line)
                if match:
                    yield LineMatch(rel, number, line, match)

    def _text(self, rel: str) -> str | None:
        real = self.ws.root / rel  # iter_files checked it: a regular file inside (a symlink resolved there)
        try:
            if real.stat().st_size > MAX_GREP_FILE_BYTES:
                self.skipped += 1
                return None
            data = real.read_bytes()
        except OSError:
            return None
        return None if is_binary(data) else decode(data, rel).text  # is_binary: the first bytes only


def grep(ws: Workspace, regex: str, path_glob: str | None = None, max_results: int = MAX_GREP_RESULTS,
         ignore_case: bool = False) -> str:
    """Lines matching `regex` (Python syntax) as "path:line: text"; binary and huge files skipped; capped at
    `max_results` with a note saying so."""
    try:
        rx = re.compile(regex, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise WorkspaceError(f"invalid regular expression {regex!r}: {exc}") from None
    hits: list[str] = []
    capped = False
    search = LineSearch(ws, rx, path_glob)
    for hit in search:
        if len(hits) >= max_results:
            capped = True
            break
        line = hit.line
        shown = line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " [...]"
        hits.append(f"{hit.path}:{hit.number}: {shown}")
    out = hits or [f"no matches for {regex!r}" + (f" in files matching {path_glob!r}" if path_glob else "")]
    if capped:
        out.append(
            f"[results capped at {max_results} matches; narrow the regex or path_glob to see the rest]"
        )
    if search.skipped:
        out.append(f"[{search.skipped} files over {MAX_GREP_FILE_BYTES} bytes not searched]")
    return "\n".join(out)
