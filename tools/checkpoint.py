"""Files as they were just before an edit, so that the edit can be undone exactly, and only over what the
edit itself left: a file changed, swapped for a link or a directory since is refused, never overwritten."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from deltaserve.errors import WorkspaceError
from deltaserve.tools.textfile import atomic_write
from deltaserve.tools.workspace import Workspace, os_errors

# What is at a path, never following a link: None (nothing), a regular file's sha256 hex digest, or one of
# these words for anything else.
LINK, DIRECTORY, SPECIAL, THROUGH_LINK = "a symbolic link", "a directory", "a special file", "through a link"


class Checkpoint:
    """The bytes and mode of some files (None: absent) just before an edit, so that an edit can be undone
    exactly: encoding, line endings and permissions as they were, a file it created removed."""

    def __init__(self, workspace: Workspace, paths: list[str]):
        self.workspace = workspace
        self.saved = {p: (workspace.read_bytes(p), workspace.mode(p)) if workspace.exists(p) else None
                      for p in paths}
        self.left: dict[str, str | None] | None = None

    def note_written(self) -> None:
        """Remember what the edit left at each path, so that undo can tell whether anyone changed it since."""
        self.left = {p: self.state(p) for p in self.saved}

    def changes_since(self) -> list[str]:
        """Why each path is no longer what the edit left (empty: safe to undo). A path already back as it
        was before the edit counts as unchanged: restoring it loses nothing."""
        assert self.left is not None, "note_written() was not called after the edit"
        reasons = []
        for path, left in self.left.items():
            now = self.state(path)
            if now not in (left, self._before(path)):
                reasons.append(f"{path} {_what_changed(now, left)}")
        return reasons

    def restore(self) -> None:
        """Put every file back as it was, acting on the path itself: a link there is replaced or removed,
        its target never touched; a path through a linked directory is refused."""
        for path, saved in self.saved.items():
            place = self._place(path)
            with os_errors(path):
                if saved is None:
                    _remove(place, path)
                else:
                    atomic_write(place, *saved)

    def state(self, path: str) -> str | None:
        """What is at `path` now (see LINK...), reading a regular file without following or blocking."""
        try:
            place = self._place(path)
        except WorkspaceError:
            return THROUGH_LINK
        with os_errors(path):
            try:
                mode = os.lstat(place).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return None
            if stat.S_ISLNK(mode):
                return LINK
            if stat.S_ISDIR(mode):
                return DIRECTORY
            if not stat.S_ISREG(mode):
                return SPECIAL
            return _digest(place)

    def _before(self, path: str) -> str | None:
        saved = self.saved[path]
        return None if saved is None else hashlib.sha256(saved[0]).hexdigest()

    def _place(self, path: str) -> Path:
        """The path itself under the root (its last name not resolved), after refusing any linked parent."""
        rel = self.workspace.relpath(path)
        parent = rel.rpartition("/")[0]
        if parent:
            self.workspace.edit_target(parent)  # raises when a parent is, or goes through, a link
        return self.workspace.root / rel


def _digest(place: Path) -> str:
    # O_NOFOLLOW: a link swapped in after the lstat is not read through; O_NONBLOCK: nor does a FIFO block.
    fd = os.open(place, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return SPECIAL
        return hashlib.sha256(fh.read()).hexdigest()


def _remove(place: Path, path: str) -> None:
    """Remove the file (or the link itself) an edit created; a directory there now is not ours to remove."""
    if os.path.isdir(place) and not os.path.islink(place):
        raise WorkspaceError(f"{path!r} is a directory now; undo removes only the file the edit created")
    place.unlink(missing_ok=True)


def _what_changed(now: str | None, left: str | None) -> str:
    if now is None:
        return "was deleted since the edit"
    if now in (LINK, DIRECTORY, SPECIAL):
        return f"is {now} now, not the file the edit left"
    if now == THROUGH_LINK:
        return "now lies behind a symbolic link (a parent directory was swapped for one)"
    if left is None:
        return "was created since the edit (the edit had deleted it)"
    return "was changed since the edit (its bytes are not what the edit left)"
