"""A sandboxed workspace: a root directory inside which every tool path is resolved.

Paths come from models, so they are untrusted. `Workspace.resolve` accepts only relative paths that stay
inside the root after following symlinks, and never anything inside `.git/`. Every refusal is a
`WorkspaceError` whose message says what was wrong, so the model can correct itself.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from deltaserve.errors import WorkspaceError
from deltaserve.tools.textfile import decode


class Workspace:
    def __init__(self, root: str | os.PathLike[str]):
        root_path = Path(root)
        if not root_path.is_dir():
            raise WorkspaceError(f"workspace root {str(root)!r} is not a directory")
        # The real path: symlinks in the root itself are fine, everything is compared against this.
        self.root = root_path.resolve(strict=True)

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """Check a path's spelling and return it normalised ("./a//b.py" -> "a/b.py") without touching the
        disk."""
        text = os.fspath(path)
        if not isinstance(text, str):
            raise WorkspaceError(f"path must be text, got {type(text).__name__}")
        if "\x00" in text:
            raise WorkspaceError(f"path {text!r} contains a NUL byte")
        if not text.strip():
            raise WorkspaceError("path is empty")
        if text.startswith(("/", "\\")) or (len(text) > 1 and text[1] == ":" and text[0].isalpha()):
            raise WorkspaceError(f"path {text!r} is absolute; give a path relative to the workspace root")
        if text.startswith("~"):
            raise WorkspaceError(f"path {text!r} starts with '~'; give a path relative to the workspace root")
        parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
        if ".." in parts:
            raise WorkspaceError(f"path {text!r} contains '..'; paths must stay inside the workspace")
        if not parts:
            raise WorkspaceError(f"path {text!r} names the workspace root itself, not a file")
        if any(p.casefold() == ".git" for p in parts):
            raise WorkspaceError(f"path {text!r} is inside .git/, which the tools never read or write")
        return "/".join(parts)

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real absolute path for `path`, guaranteed inside the root (the file need not exist)."""
        rel = self.relpath(path)
        real = (self.root / rel).resolve(strict=False)  # follows every symlink, file and parents
        try:
            inside = real.relative_to(self.root)
        except ValueError:
            raise WorkspaceError(
                f"path {rel!r} resolves through a symlink to {str(real)!r}, outside the workspace"
            ) from None
        if any(p.casefold() == ".git" for p in inside.parts):
            raise WorkspaceError(f"path {rel!r} resolves into .git/, which the tools never read or write")
        return real

    def exists(self, path: str | os.PathLike[str]) -> bool:
        return self.resolve(path).is_file()

    def read_bytes(self, path: str | os.PathLike[str]) -> bytes:
        real = self.resolve(path)
        if real.is_dir():
            raise WorkspaceError(f"{self.relpath(path)!r} is a directory, not a file")
        if not real.exists():
            raise WorkspaceError(f"file {self.relpath(path)!r} does not exist")
        return real.read_bytes()

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """Decoded text (newlines as in the file); binary files are refused."""
        return decode(self.read_bytes(path), self.relpath(path)).text
