"""A sandboxed workspace: a root directory inside which every tool path is resolved.

Paths come from models, so they are untrusted. `Workspace.resolve` accepts only relative paths that stay
inside the root after following symlinks, and never anything inside `.git/`. Symlinks are followed at each
call, so one a test planted in the workspace (pointing outside, into .git, or at itself) is refused too.

This module is the one place the tools touch the file system for a model-given path, and every OS-level
surprise on the way (a symlink loop, a name too long, permission denied, a file where a directory should be,
a directory or FIFO where a file should be) becomes a `WorkspaceError` whose message says what was wrong, so
the model can correct itself and no caller sees a bare OSError or RuntimeError.

Symlinks: reading follows links that stay inside the workspace. Editing never does: `edit_target` refuses
a path that is, or goes through, a symbolic link, so a patch can neither write through a link into its
target nor delete a target through its link, and two spellings of one file cannot both be edited.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from deltaserve.errors import WorkspaceError
from deltaserve.tools.textfile import decode

NAME_MAX = 255  # bytes in one path component (Linux)
PATH_MAX = 4096  # bytes in a whole path

_WHY = {
    errno.ELOOP: "it runs into a symbolic link loop",
    errno.ENAMETOOLONG: "the path (or one of its names) is too long",
    errno.EACCES: "Permission denied",
    errno.EPERM: "Operation not permitted",
    errno.ENOTDIR: "a part of the path is a file, not a directory",
    errno.EISDIR: "it is a directory, not a file",
    errno.ENOENT: "it does not exist",
}


def os_error_message(rel: str, exc: BaseException) -> str:
    """A sentence for the model saying why the OS refused `rel`."""
    if isinstance(exc, RuntimeError):  # pathlib's "Symlink loop from ..." before Python 3.13
        return f"path {rel!r} cannot be used: {_WHY[errno.ELOOP]}"
    code = getattr(exc, "errno", None)
    why = _WHY.get(code) or getattr(exc, "strerror", None) or str(exc)
    return f"path {rel!r} cannot be used: {why}"


@contextmanager
def os_errors(rel: str) -> Iterator[None]:
    """Turn the OS's errors (and pathlib's symlink-loop RuntimeError) inside the block into WorkspaceError."""
    try:
        yield
    except (OSError, RuntimeError) as exc:
        raise WorkspaceError(os_error_message(rel, exc)) from None


class Workspace:
    def __init__(self, root: str | os.PathLike[str]):
        root_path = Path(root)
        with os_errors(str(root)):
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
        rel = "/".join(parts)
        if len(rel.encode("utf-8", "surrogatepass")) > PATH_MAX or any(
                len(p.encode("utf-8", "surrogatepass")) > NAME_MAX for p in parts):
            raise WorkspaceError(f"path {rel[:80]!r}... is too long (names up to {NAME_MAX} bytes, paths "
                                 f"up to {PATH_MAX})")
        return rel

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real absolute path for `path`, guaranteed inside the root (the file need not exist)."""
        rel = self.relpath(path)
        with os_errors(rel):
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
        """Whether a regular file is there (a refused path raises; a directory or FIFO is no file)."""
        real = self.resolve(path)
        with os_errors(self.relpath(path)):
            try:
                return stat.S_ISREG(os.stat(real).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                return False

    def existing_file(self, path: str | os.PathLike[str]) -> Path | None:
        """The real path of the regular file at `path`, None when nothing is there. Directories and special
        files (a FIFO a test left behind would block the reader forever) are refused."""
        real = self.resolve(path)
        rel = self.relpath(path)
        with os_errors(rel):
            try:
                mode = os.stat(real).st_mode
            except FileNotFoundError:
                return None
        if stat.S_ISDIR(mode):
            raise WorkspaceError(f"{rel!r} is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise WorkspaceError(f"{rel!r} is not a regular file (a FIFO, socket or device)")
        return real

    def edit_target(self, path: str | os.PathLike[str]) -> Path:
        """The real path an edit of `path` writes (or deletes), refusing every path that is or goes through
        a symbolic link: the edit tools treat links as something they do not touch, never as their
        targets."""
        rel = self.relpath(path)
        real = self.resolve(rel)
        here = self.root
        with os_errors(rel):
            for i, part in enumerate(rel.split("/")):
                here = here / part
                try:
                    st = os.lstat(here)
                except FileNotFoundError:
                    break  # the rest is to be created
                if stat.S_ISLNK(st.st_mode):
                    link = "/".join(rel.split("/")[: i + 1])
                    to = os.readlink(here)
                    how = (f"is a symbolic link (to {to!r})" if link == rel
                           else f"goes through the symbolic link {link!r} (to {to!r})")
                    raise WorkspaceError(
                        f"{rel!r} {how}; the edit tools never write or delete through links: edit "
                        f"{real.relative_to(self.root).as_posix()!r} itself")
                if not stat.S_ISDIR(st.st_mode) and i < rel.count("/"):
                    raise WorkspaceError(os_error_message(rel, OSError(errno.ENOTDIR, "")))
        return real

    def identity(self, path: str | os.PathLike[str]) -> tuple[int, int] | Path:
        """What makes two paths the same file: (device, inode) of an existing file (hard links share it),
        else its real path."""
        real = self.existing_file(path)
        if real is None:
            return self.resolve(path)
        with os_errors(self.relpath(path)):
            st = os.stat(real)
        return (st.st_dev, st.st_ino)

    def read_bytes(self, path: str | os.PathLike[str]) -> bytes:
        real = self.existing_file(path)
        if real is None:
            raise WorkspaceError(f"file {self.relpath(path)!r} does not exist")
        with os_errors(self.relpath(path)):
            return real.read_bytes()

    def mode(self, path: str | os.PathLike[str]) -> int:
        """The permission bits of the existing file at `path`."""
        real = self.existing_file(path)
        if real is None:
            raise WorkspaceError(f"file {self.relpath(path)!r} does not exist")
        with os_errors(self.relpath(path)):
            return stat.S_IMODE(os.stat(real).st_mode)

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """Decoded text (newlines as in the file); binary files are refused."""
        return decode(self.read_bytes(path), self.relpath(path)).text
