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
`+++` header names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from deltaserve.errors import DeltaserveError, PatchError
from deltaserve.tools.hunks import line_could_match
from deltaserve.tools.search_replace import parse_search_replace_blocks
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
        whole = text[:text.rfind("\n") + 1]
        if not whole:
            return None
        for closing in ("", *CLOSINGS):
            try:
                blocks = parse_search_replace_blocks(whole + closing)
                break
            except PatchError:
                continue
        else:
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



def _diff_path(header: str) -> str | None:
    """The path a `+++` header names (`b/` taken off, a timestamp after a tab left out)."""
    name = header.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name
