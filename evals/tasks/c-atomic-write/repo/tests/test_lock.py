import os
import time

import pytest

from safefile import FileLock, LockTimeout


class FakeTime:
    def __init__(self):
        self.now = 0.0

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_lock_and_release(tmp_path):
    lock = FileLock(tmp_path / "db.lock")
    with lock:
        assert lock.held and (tmp_path / "db.lock").read_text() == f"{os.getpid()}\n"
    assert not lock.held and not (tmp_path / "db.lock").exists()


def test_second_lock_times_out(tmp_path):
    fake = FakeTime()
    with FileLock(tmp_path / "db.lock"):
        other = FileLock(tmp_path / "db.lock", timeout=1, poll=0.25, sleep=fake.sleep, clock=fake.clock)
        with pytest.raises(LockTimeout):
            other.acquire()
    assert fake.now == 1.0


def test_stale_lock_is_taken_over(tmp_path):
    path = tmp_path / "db.lock"
    path.write_text("12345\n")
    old = time.time() - 3600
    os.utime(path, (old, old))
    with FileLock(path, timeout=0):
        assert path.read_text() == f"{os.getpid()}\n"


def test_release_without_acquire(tmp_path):
    with pytest.raises(RuntimeError):
        FileLock(tmp_path / "x.lock").release()
