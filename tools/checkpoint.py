"""Files as they were just before an edit, so that the edit can be undone exactly."""

from __future__ import annotations

from deltaserve.tools.textfile import atomic_write
from deltaserve.tools.workspace import Workspace


class Checkpoint:
    """The bytes and mode of some files (None: absent) just before an edit, so that an edit can be undone
    exactly: encoding, line endings and permissions as they were, a file it created removed."""

    def __init__(self, workspace: Workspace, paths: list[str]):
        self.workspace = workspace
        self.saved = {p: (workspace.read_bytes(p), workspace.mode(p)) if workspace.exists(p) else None
                      for p in paths}

    def restore(self) -> None:
        for path, saved in self.saved.items():
            real = self.workspace.resolve(path)
            if saved is None:
                real.unlink(missing_ok=True)
            else:
                atomic_write(real, *saved)
