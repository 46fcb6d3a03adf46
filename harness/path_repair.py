"""Edits aimed at a file that does not exist, re-aimed at the file in play their code belongs to.

Small models keep the instructions' placeholder path (`path/to/file.py`) or drop a folder (`summary.py`
for `quickstats/summary.py`) while the code they wrote is right: Qwen2.5-Coder-1.5B did so in most steps on
files too long to show in full, where the prompt's closing line had no file to name. An edit is re-aimed only
when its own text singles out one file among those in play:

- a SEARCH/REPLACE block: the one file that contains its SEARCH text (whitespace aside);
- whole functions or classes (Python): the one file that defines at least half of the names the code
  defines, and one at the least;
- a whole Python file: the one file all of whose definitions it holds (a shorter file would delete code);
- otherwise the one file of that file name, unless the edit is a whole file (it would replace that file
  with what may be less) or creates one (an empty SEARCH).

Anything else stays as written: a new file, or an apply error the model is told about.

A SEARCH/REPLACE block naming a file that exists but does not hold its SEARCH text (whitespace aside) goes
to the one other file in play that does (`repair_misnamed`: the model named the module it was reading,
say, while quoting a function of the one beside it). It runs after stale blocks are re-aimed
(stale_edits.py), so a block quoting the named file's own earlier text stays there.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import posixpath

from deltaserve.errors import DeltaserveError
from deltaserve.tools.search_replace import SearchReplace
from deltaserve.tools.workspace import Workspace

DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclasses.dataclass(frozen=True)
class Moved:
    named: str  # the path the reply wrote
    applied_to: str  # the file its edit was aimed at instead
    missing: bool = True  # `named` does not exist (else: it does, but its SEARCH text is elsewhere)


def _squashed(text: str) -> str:
    return " ".join(text.split())


def defined_names(code: str) -> set[str] | None:
    """Names of every function and class `code` defines (nested ones too); None when it is not Python."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    return {n.name for n in ast.walk(tree) if isinstance(n, DEFINITIONS)}


@dataclasses.dataclass
class _Candidate:
    """A file in play, its text squashed and its definitions worked out once for all the edits."""

    text: str

    @functools.cached_property
    def squashed(self) -> str:
        return _squashed(self.text)

    @functools.cached_property
    def names(self) -> set[str]:
        return defined_names(self.text) or set()


def _belongs(edit, file: _Candidate) -> bool:
    """Whether `edit`'s own code points at `file`."""
    if isinstance(edit, SearchReplace):
        search = _squashed(edit.search)
        return bool(search) and search in file.squashed
    whole_file = hasattr(edit, "content")
    code = edit.content if whole_file else getattr(edit, "code", None)
    names = defined_names(code) if code else None
    if not names:
        return False
    present = file.names
    if whole_file:
        return bool(present) and present <= names
    return 2 * len(names & present) >= len(names)


def _may_follow_its_name(edit) -> bool:
    """Whether an edit whose text singles out no file may still go to the one file of its file name."""
    if hasattr(edit, "content"):  # a whole file: only its own definitions can say it is that file
        return False
    return not isinstance(edit, SearchReplace) or bool(edit.search.strip())


def _missing(workspace: Workspace, path: str) -> bool:
    try:
        return not workspace.exists(path)
    except DeltaserveError:  # a refused path: the apply says why
        return False


def repair_paths(edits: list, workspace: Workspace, in_play: list[str]) -> tuple[list, list[Moved]]:
    """(edits with missing paths re-aimed where their text singles out one file of `in_play`, the moves).
    The files are read only when an edit names a missing one (the usual edit names a real file)."""
    files: dict[str, _Candidate] | None = None
    repaired, moved = [], []
    for edit in edits:
        path = getattr(edit, "path", None)
        if path is None or not _missing(workspace, path):
            repaired.append(edit)
            continue
        if files is None:
            files = {p: _Candidate(workspace.read_text(p)) for p in in_play if not _missing(workspace, p)}
        hits = [p for p, file in files.items() if _belongs(edit, file)]
        if not hits and _may_follow_its_name(edit):
            hits = [p for p in files if posixpath.basename(p) == posixpath.basename(path)]
        if len(hits) == 1:
            edit = dataclasses.replace(edit, path=hits[0])
            moved.append(Moved(path, hits[0]))
        repaired.append(edit)
    return repaired, moved


def repair_misnamed(edits: list, workspace: Workspace, in_play: list[str]) -> tuple[list, list[Moved]]:
    """(edits whose SEARCH text is not in the existing file they name but in exactly one other file of
    `in_play` re-aimed there, the moves)."""
    repaired, moved = [], []
    files: dict[str, _Candidate] = {}

    def candidate(path: str) -> _Candidate:
        if path not in files:
            files[path] = _Candidate(workspace.read_text(path))
        return files[path]

    for edit in edits:
        if not isinstance(edit, SearchReplace) or not edit.search.strip() or _missing(workspace, edit.path):
            repaired.append(edit)
            continue
        try:
            named = workspace.relpath(edit.path)
            found = _belongs(edit, candidate(named))
        except DeltaserveError:  # a refused or unreadable path: the apply says why
            found = True
        if found:
            repaired.append(edit)
            continue
        hits = [p for p in in_play
                if p != named and not _missing(workspace, p) and _belongs(edit, candidate(p))]
        if len(hits) == 1:
            moved.append(Moved(edit.path, hits[0], missing=False))
            edit = dataclasses.replace(edit, path=hits[0])
        repaired.append(edit)
    return repaired, moved
