"""Path-escape corpus: every way out of the workspace is refused with a clear WorkspaceError, including
the symlinks (and FIFOs, hard links) a test run leaves in the workspace for later tool calls."""

import os

import pytest

from deltaserve.errors import ToolError
from deltaserve.tools import files, patch
from deltaserve.tools.sandbox import INSTALL_HINT, bwrap_problem
from deltaserve.tools.tests import run_tests
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


# A test run plants these in the workspace; every later tool call must stay inside (or refuse).
PLANTER = """
import os, sys
outside = sys.argv[1]
os.symlink("/etc/passwd", "leak_file")
os.symlink(outside, "leak_dir")
os.symlink(os.path.join(outside, "new.txt"), "dangling")
os.symlink("loop_b", "loop_a")
os.symlink("loop_a", "loop_b")
os.symlink(".git/config", "git_link")
os.symlink("../../outside/secret.txt", "pkg/rel_out")
os.mkfifo("fifo")
try:  # a hard link to an outside file: refused across the sandbox's mounts, possible without one
    os.link(os.path.join(outside, "secret.txt"), "hard")
except OSError as exc:
    print("no hard link:", exc)
print("planted")
"""
PLANTED = ["leak_file", "leak_dir/secret.txt", "leak_dir/new.py", "dangling", "loop_a", "git_link",
           "pkg/rel_out", "fifo"]


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=pytest.mark.skipif(
    bwrap_problem() is not None, reason=f"{bwrap_problem()}; {INSTALL_HINT}"))])
def test_symlinks_planted_by_tests_do_not_let_later_tool_calls_out(ws, sandbox):
    outside = ws.root.parent / "outside"
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    (ws.root / "plant.py").write_text(PLANTER)
    res = run_tests(ws, f"python plant.py {outside}", timeout=60, sandbox=sandbox)
    assert res.exit_code == 0 and "planted" in res.output, res.output

    for path in PLANTED:
        with pytest.raises(ToolError):
            files.view(ws, path)
        with pytest.raises(ToolError):
            patch.write_file(ws, path, "pwned\n")
    with pytest.raises(ToolError):
        patch.apply_search_replace(ws, "pkg/rel_out", "secret", "pwned")
    with pytest.raises(ToolError):
        patch.apply_patch(ws, "--- /dev/null\n+++ b/leak_dir/evil.py\n@@ -0,0 +1 @@\n+evil = 1\n")
    listed = files.list_files(ws)
    assert not set(listed) & {"leak_file", "dangling", "loop_a", "loop_b", "git_link", "pkg/rel_out", "fifo"}
    assert not any(p.startswith("leak_dir/") for p in listed)
    hits = files.grep(ws, "^secret$|^root:").splitlines()  # neither the outside file nor /etc/passwd...
    hard = os.path.isfile(ws.root / "hard")  # ... except through a hard link, possible only unsandboxed
    assert hits == (["hard:1: secret"] if hard else ["no matches for '^secret$|^root:'"])
    assert hard == (sandbox == "none")
    if hard:  # writing it replaces the link, never the outside file
        patch.write_file(ws, "hard", "pwned\n")
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before
