"""The code states whose tests have run in this run, so that an edit giving one of them again is not applied.

A small model asked again after a failed edit often writes the same change in other words: another
format, other whitespace, a SEARCH one line longer. Its text differs, so it is no repeated reply, but the
code it gives has been tested already: running the tests on it again would cost a step and tell nothing.
A state is the set of files that differ from how they were when the run started, each by its text's hash,
so the same code is recognised whatever edits led to it; the code as it was at the start is the empty set.
"""

from __future__ import annotations

import hashlib

CodeState = frozenset  # of (path, sha1 of its text, or None for a deleted file)
START: CodeState = frozenset()


def _text(workspace, path: str) -> str | None:
    return workspace.read_text(path) if workspace.exists(path) else None


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def code_state(workspace, originals: dict[str, str | None], new_contents: dict[str, str | None]) -> CodeState:
    """The run's code once `new_contents` (path -> text after an edit, None: deleted) is written to
    `workspace`, given each touched file's text at the start (`originals`; a file not in it is as it
    is on disk now)."""
    state = set()
    for path in set(originals) | set(new_contents):
        now = new_contents[path] if path in new_contents else _text(workspace, path)
        start = originals[path] if path in originals else _text(workspace, path)
        if now != start:
            state.add((path, _digest(now)))
    return frozenset(state)
