"""An advisory lock held by creating `<name>.lock` exclusively; works across processes on one machine.

A lock file older than `stale_after` seconds is treated as left behind by a crashed process and taken over.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable


class LockTimeout(TimeoutError):
    pass


class FileLock:
    def __init__(self, path: str | os.PathLike, timeout: float = 10.0, poll: float = 0.05,
                 stale_after: float | None = 300.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        self.path = Path(path)
        self.timeout = timeout
        self.poll = poll
        self.stale_after = stale_after
        self.sleep = sleep
        self.clock = clock
        self._held = False

    @property
    def held(self) -> bool:
        return self._held

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)
        return True

    def _is_stale(self) -> bool:
        if self.stale_after is None:
            return False
        try:
            age = time.time() - self.path.stat().st_mtime
        except FileNotFoundError:
            return False
        return age > self.stale_after

    def acquire(self) -> None:
        if self._held:
            raise RuntimeError(f"{self.path} is already held by this FileLock")
        deadline = self.clock() + self.timeout
        while not self._try_create():
            if self._is_stale():
                self.path.unlink(missing_ok=True)
                continue
            if self.clock() >= deadline:
                raise LockTimeout(f"could not lock {self.path} within {self.timeout} s")
            self.sleep(self.poll)
        self._held = True

    def release(self) -> None:
        if not self._held:
            raise RuntimeError(f"{self.path} is not held")
        self.path.unlink(missing_ok=True)
        self._held = False

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()
