"""Path-escape corpus: every way out of the workspace is refused with a clear WorkspaceError."""

import os

import pytest

from deltaserve.tools.workspace import Workspace, WorkspaceError


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "mod.py").write_text("x = 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    os.symlink("/etc/passwd", root / "etc_link")
    os.symlink(outside, root / "outdir")  # symlinked parent dir pointing outside
    os.symlink(root / ".git", root / "gitlink")  # a symlink into .git
    os.symlink(root / "pkg" / "mod.py", root / "inner_link.py")  # stays inside: allowed
    return Workspace(root)


ESCAPES = [
    ("../outside/secret.txt", "'..'"),
    ("pkg/../../outside/secret.txt", "'..'"),
    ("..", "'..'"),
    ("/etc/passwd", "absolute"),
    ("\\windows\\system32", "absolute"),
    ("C:\\Windows\\win.ini", "absolute"),
    ("~/.ssh/id_rsa", "'~'"),
    ("etc_link", "outside the workspace"),
    ("outdir/secret.txt", "outside the workspace"),
    ("outdir/new_file.txt", "outside the workspace"),
    ("pkg/mod.py\x00.txt", "NUL"),
    (".git/config", ".git"),
    ("./.git/config", ".git"),
    ("pkg/../.git/HEAD", "'..'"),
    (".GIT/config", ".git"),
    ("gitlink/config", ".git"),
    ("", "empty"),
    (".", "root itself"),
]


@pytest.mark.parametrize("path,why", ESCAPES)
def test_escapes_refused(ws, path, why):
    with pytest.raises(WorkspaceError) as exc:
        ws.resolve(path)
    assert why in str(exc.value)
    with pytest.raises(WorkspaceError):
        ws.read_text(path)


def test_inside_paths_resolve(ws):
    assert ws.resolve("pkg/mod.py") == ws.root / "pkg" / "mod.py"
    assert ws.relpath("./pkg//mod.py") == "pkg/mod.py"
    assert ws.resolve("pkg/new.py") == ws.root / "pkg" / "new.py"  # need not exist
    assert ws.resolve("inner_link.py") == ws.root / "pkg" / "mod.py"  # symlink inside the root is followed
    assert ws.read_text("pkg/mod.py") == "x = 1\n"


def test_binary_and_missing_files_refused(ws):
    (ws.root / "blob.bin").write_bytes(b"\x00\x01\x02abc")
    with pytest.raises(WorkspaceError, match="binary"):
        ws.read_text("blob.bin")
    with pytest.raises(WorkspaceError, match="does not exist"):
        ws.read_text("nope.py")
    with pytest.raises(WorkspaceError, match="directory"):
        ws.read_text("pkg")


def test_root_must_be_a_directory(tmp_path):
    with pytest.raises(WorkspaceError):
        Workspace(tmp_path / "missing")
