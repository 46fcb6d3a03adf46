import hashlib
import os

import pytest

from deltaserve.tools.workspace import Workspace


def make_files(root, files):
    """files: path -> str (written as UTF-8 bytes exactly, so CRLF stays CRLF) or bytes."""
    for path, content in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def snapshot(root):
    """sha256 + mode of every file under root (including .git), to prove a failed edit changed nothing."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = ("link", os.readlink(p))
                continue
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (hashlib.sha256(fh.read()).hexdigest(), os.stat(p).st_mode)
    return out


@pytest.fixture(name="snapshot")
def snapshot_fixture():
    return snapshot


@pytest.fixture
def workspace(tmp_path):
    def _make(files):
        root = tmp_path / "ws"
        root.mkdir(exist_ok=True)
        make_files(root, files)
        return Workspace(root)

    return _make


def running_in(root) -> list[int]:
    """Host pids of live processes whose working directory is under `root` (sandboxed ones included)."""
    root = str(root)
    pids = []
    for entry in os.listdir("/proc"):
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            with open(f"/proc/{entry}/stat") as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X") and (cwd == root or cwd.startswith(root + "/")):
            pids.append(int(entry))
    return pids


@pytest.fixture(name="running_in")
def running_in_fixture():
    return running_in
