"""Early stop: a reply read as it streams, cut the moment one of its edits can no longer apply.

A small model that quotes a line the file does not have decodes the rest of its block, and often of its
reply, for nothing: the edit fails whatever follows. With any provider the stream can be closed at that
line (our engine and server then free the request), and the model is told at once which line is not there.
`SearchReplaceWatch` reads SEARCH/REPLACE replies: each whole SEARCH line must be placeable on some line
of the file it names, or of another file in play, or of an earlier block's REPLACE text (blocks apply in
order), by the tools' own matching (tools.hunks.line_could_match: exact to fuzzy). A block naming a file
that does not exist goes on (the pipeline's repairs find the file its lines are in), as does one whose
lines are in another file in play (it is re-aimed there).
`UdiffWatch` reads unified diffs alike: each context or removed line of a hunk, against the file its
`+++` header names. `SymbolWatch` reads symbol replies: the code of each Python block must still be able to
parse (a line no later one can repair ends it), and a function it writes alone must name no method that
several classes of the file have (the format could not tell which one it replaces).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from deltaserve.errors import DeltaserveError, PatchError
from deltaserve.harness.formats.symbol import block_code
from deltaserve.harness.syntax import python_error_so_far
from deltaserve.tools.fences import fenced_blocks
from deltaserve.tools.hunks import line_could_match
from deltaserve.tools.named_blocks import named_blocks
from deltaserve.tools.search_replace import parse_search_replace_blocks
from deltaserve.tools.symbols import definitions, locate, parse_python
from deltaserve.tools.workspace import Workspace

EARLY_STOP = "early_stop"  # the finish reason of a reply its watch ended
# ways to close a reply cut after a whole line, so the parser reads its last block as far as it goes
CLOSINGS = (">>>>>>> REPLACE\n", "=======\n>>>>>>> REPLACE\n")


def file_reader(workspace: Workspace) -> Callable[[str], str | None]:
    """A watch's reader over a workspace: a file's text, None for one that is not there (or not allowed)."""

    def read(path: str) -> str | None:
        try:
            return workspace.read_text(path) if workspace.exists(path) else None
        except (DeltaserveError, OSError, UnicodeDecodeError):
            return None

    return read


def search_replace_so_far(text: str) -> list:
    """The SEARCH/REPLACE blocks in the whole lines of a reply so far, its last one closed as written so far
    ([] when it holds none, or none readable yet)."""
    whole = text[:text.rfind("\n") + 1]
    for closing in ("", *CLOSINGS) if whole else ():
        try:
            return parse_search_replace_blocks(whole + closing)
        except PatchError:
            continue
    return []


class _FileWatch:
    """What the watches share: the files' lines, read once each (None: no such file)."""

    def __init__(self, read: Callable[[str], str | None]):
        self.read = read
        self._lines: dict[str, list[str] | None] = {}

    def _file_lines(self, path: str) -> list[str] | None:
        if path not in self._lines:
            text = self.read(path)
            self._lines[path] = None if text is None else text.splitlines()
        return self._lines[path]


class SearchReplaceWatch(_FileWatch):
    """watch(text so far) -> why the reply is stopped, or None to go on. `read(path)` gives a file's text,
    None when there is no such file. `in_play`: the other files a block may be re-aimed at (a block naming
    one file while quoting another in play goes there: harness/path_repair.py), so a line any of them
    could place goes on."""

    def __init__(self, read: Callable[[str], str | None], in_play: Iterable[str] = ()):
        super().__init__(read)
        self.in_play = list(in_play)
        self._checked: dict[int, int] = {}  # block -> SEARCH lines already found placeable

    def __call__(self, text: str) -> str | None:
        blocks = search_replace_so_far(text)
        if not blocks:
            return None  # not readable as blocks (yet): the pipeline will say what is wrong, if anything
        written: list[str] = []  # the REPLACE lines of the blocks before: the tools apply blocks in order,
        for n, block in enumerate(blocks):  # so a later block may quote what an earlier one wrote
            reason = self._check(n, block.path, block.search.splitlines(), written)
            if reason:
                return reason
            written += block.replace.splitlines()
        return None

    def _check(self, n: int, path: str, search: list[str], written: list[str]) -> str | None:
        done = self._checked.get(n, 0)
        if len(search) <= done:
            return None
        lines = self._file_lines(path)
        if lines is None:  # a misnamed file: the pipeline's repairs look for the file its lines are in
            return None
        for line in search[done:]:
            if not (self._placeable(line, [path, *self.in_play]) or line_could_match(line, written)):
                return (f"The SEARCH line {line.strip()!r} is not in {path} (nor close to any of its lines), "
                        "so the block cannot apply; the reply was stopped there. Copy SEARCH lines exactly "
                        "from the file as shown.")
        self._checked[n] = len(search)
        return None

    def _placeable(self, line: str, paths: list[str]) -> bool:
        files = (self._file_lines(path) for path in paths)
        return any(lines is not None and line_could_match(line, lines) for lines in files)



class UdiffWatch(_FileWatch):
    """watch(text so far) -> why a diff reply is stopped, or None to go on: each whole context or removed
    line of a hunk must be placeable on some line of the file its headers name (`read` as for
    SearchReplaceWatch)."""

    def __init__(self, read: Callable[[str], str | None]):
        super().__init__(read)
        self._checked = 0  # whole reply lines already read

    def __call__(self, text: str) -> str | None:
        lines = text.split("\n")[:-1]  # whole lines only
        path, in_hunk = None, False
        for n, line in enumerate(lines):
            if line.startswith("+++ "):
                path, in_hunk = _diff_path(line[4:]), False
            elif line.startswith("@@"):
                in_hunk = True
            elif line.startswith("```") or line.startswith("--- "):
                in_hunk = False
            elif in_hunk and n >= self._checked and line[:1] in (" ", "-") and path is not None:
                file_lines = self._file_lines(path)
                if file_lines is not None and not line_could_match(line[1:], file_lines):
                    return (f"The diff's line {line!r} is not in {path} (nor close to any of its lines), so "
                            "its hunk cannot apply; the reply was stopped there. Copy context and removed "
                            "lines exactly from the file as shown.")
        self._checked = len(lines)
        return None


# a function at the code's margin: the name the format looks up in the module
_FUNCTION_HEAD = re.compile(r"(?:async[ \t]+)?def[ \t]+([A-Za-z_]\w*)")


class SymbolWatch(_FileWatch):
    """watch(text so far) -> why a symbol reply is stopped, or None to go on: a Python block whose code has
    a line no later one can repair (`not: Schema = None`; an open bracket or string goes on), a closed one
    that does not parse, or a function written alone under a name several methods of its file have and no
    top-level function has (`read` as for SearchReplaceWatch)."""

    def __init__(self, read: Callable[[str], str | None]):
        super().__init__(read)
        self._definitions: dict[str, dict[str, ast.AST] | None] = {}
        self._passed: set[int] = set()  # closed blocks checked (by their fence's line)

    def __call__(self, text: str) -> str | None:
        if search_replace_so_far(text):  # the format reads its SEARCH/REPLACE blocks then, not its fences
            return None
        whole = text[:max(text.rfind("\n"), 0)]  # its whole lines, the last one's newline left off
        lines = whole.split("\n")
        closed = {block.start for block in fenced_blocks(lines) if block.end < len(lines)}
        for block in named_blocks(whole):
            if not block.path.endswith(".py") or block.start in self._passed:
                continue
            why = self._check(block.path, block.content, block.start in closed)
            if why:
                return why
            if block.start in closed:
                self._passed.add(block.start)
        return None

    def _check(self, path: str, content: str, closed: bool) -> str | None:
        code = block_code(content)
        if any(line.startswith(("+", "-", "@@")) for line in code.split("\n")):
            return None  # diff marks the format may yet take out, or a diff that `auto` reads as one
        error = python_error_so_far(code, complete=closed)
        if not closed and isinstance(error, IndentationError) and error.lineno == 1:
            error = None  # a margin misread while a string is open (its lines at column 0): go on
        if error is not None:
            return (f"The code for {path} is not valid Python at line {error.lineno} of its block "
                    f"({error.msg}), and no later line could make it so: the reply was stopped there. "
                    "Write each definition as complete, valid Python.")
        return self._ambiguous(path, code)

    def _ambiguous(self, path: str, code: str) -> str | None:
        known = self._module_definitions(path)
        if not known:
            return None
        lines = code.split("\n")
        for n, line in enumerate(lines):
            head = _FUNCTION_HEAD.match(line)
            # a head at the margin, not a string's line: the code above it parses whole
            if head and parse_python("\n".join(lines[:n])) is not None:
                try:
                    locate(head.group(1), known, path)
                except PatchError as exc:
                    return f"{exc} The reply was stopped there."
        return None

    def _module_definitions(self, path: str) -> dict[str, ast.AST] | None:
        if path not in self._definitions:
            text = self.read(path)
            tree = None if text is None else parse_python(text)
            self._definitions[path] = None if tree is None else definitions(tree)
        return self._definitions[path]


WATCHES = {"search_replace": SearchReplaceWatch, "udiff": UdiffWatch, "symbol": SymbolWatch}


def watch_for(format_name: str, read: Callable[[str], str | None], in_play: Iterable[str] = ()):
    """The early-stop watch of a format's replies (None: it has none)."""
    if format_name == "search_replace":
        return SearchReplaceWatch(read, in_play)
    return WATCHES[format_name](read) if format_name in WATCHES else None


def _diff_path(header: str) -> str | None:
    """The path a `+++` header names (`b/` taken off, a timestamp after a tab left out)."""
    name = header.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name
