"""Write files so that readers see either the old or the new content, never a half-written file.

The data goes to a temporary file in the same directory (same file system), is flushed to disk, and then
renamed over the target with os.replace, which is atomic.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from safefile.lock import FileLock

TEMP_SUFFIX = ".tmp"


def lock_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".lock")


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8",
                  keep_mode: bool = True) -> Iterator[IO[Any]]:
    """`with atomic_writer(p) as f: f.write(...)`: the target changes only if the block completes."""
    if mode not in ("w", "wb"):
        raise ValueError("mode must be 'w' or 'wb'")
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
    tmp = Path(tmp_name)
    handle = os.fdopen(fd, mode, encoding=None if "b" in mode else encoding)
    yield handle
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    if keep_mode and path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_writer(path, "wb") as handle:
        handle.write(data)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    with atomic_writer(path, "w", encoding=encoding) as handle:
        handle.write(text)


def read_json(path: str | os.PathLike, default: Any = None) -> Any:
    """The parsed file, or `default` when it does not exist (a corrupt file still raises)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return default
    return json.loads(text)


def write_json(path: str | os.PathLike, data: Any, indent: int | None = 2) -> None:
    with atomic_writer(path) as handle:
        json.dump(data, handle, indent=indent, sort_keys=True)
        handle.write("\n")


def update_json(path: str | os.PathLike, change: Callable[[Any], Any], default: Any = None,
                timeout: float = 10.0) -> Any:
    """Read-modify-write under the file's lock: `change(old)` returns the new data, which is written
    atomically and returned. If `change` raises, the file is left as it was."""
    lock = FileLock(lock_path(path), timeout=timeout)
    lock.acquire()
    current = read_json(path, default)
    updated = change(current)
    write_json(path, updated)
    lock.release()
    return updated


def leftover_temp_files(directory: str | os.PathLike) -> list[Path]:
    """Temporary files an interrupted writer left in `directory` (for cleanup jobs)."""
    found = (p for p in Path(directory).iterdir() if p.name.startswith(".") and p.name.endswith(TEMP_SUFFIX))
    return sorted(found)
