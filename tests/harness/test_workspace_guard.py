import subprocess

import pytest

from deltaserve.harness.workspace_guard import (
    DirtyWorkspaceError,
    Snapshot,
    check_clean,
    make_copy,
    uncommitted_changes,
)
from deltaserve.tools.workspace import Workspace


def git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "user.email", "t@example.com")
    git(tmp_path, "config", "user.name", "t")
    (tmp_path / "a.py").write_text("x = 1\n")
    git(tmp_path, "add", "a.py")
    git(tmp_path, "commit", "-qm", "init")
    return tmp_path


def test_clean_repo_passes_and_dirty_repo_is_refused(repo):
    check_clean(repo)
    (repo / "a.py").write_text("x = 2\n")
    (repo / "notes.txt").write_text("mine")
    with pytest.raises(DirtyWorkspaceError, match="--copy") as info:
        check_clean(repo)
    assert "a.py" in str(info.value) and "notes.txt" in str(info.value)


def test_not_a_git_repo_is_not_checked(tmp_path):
    assert uncommitted_changes(tmp_path) is None
    check_clean(tmp_path)


def test_copy_leaves_the_original_alone(repo):
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").write_text("the project's interpreter")
    (repo / "web" / "node_modules").mkdir(parents=True)
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "a.pyc").write_text("stale")
    copy = make_copy(repo)
    assert (copy / "a.py").read_text() == "x = 1\n" and not (copy / "__pycache__").exists()
    # installed environments are linked, so a test command naming `.venv/bin/python` still runs in the copy
    assert (copy / ".venv").is_symlink() and (copy / ".venv" / "bin" / "python").read_text().startswith("the")
    assert (copy / "web" / "node_modules").resolve() == (repo / "web" / "node_modules").resolve()
    (copy / "a.py").write_text("changed\n")
    assert (repo / "a.py").read_text() == "x = 1\n"


def test_snapshot_diff(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    ws = Workspace(tmp_path)
    snap = Snapshot(ws)
    snap.remember(["a.py", "new.py"])
    (tmp_path / "a.py").write_text("x = 1\ny = 3\n")
    (tmp_path / "new.py").write_text("z")
    snap.remember(["a.py"])  # the first original is kept
    assert snap.diff() == ("--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
                           "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+z\n\\ No newline at end of file\n")


def test_a_planted_git_config_runs_nothing_on_the_host(tmp_path):
    """What a test can leave in a workspace without a .git of its own (issue 42): a .git/HEAD and a
    .git/config whose core.fsmonitor is a command. The clean-workspace check runs git status there, on
    the host, unsandboxed; the command must not run."""
    ws, marker = tmp_path / "ws", tmp_path / "fsmonitor-ran"
    for folder in ("objects", "refs/heads"):
        (ws / ".git" / folder).mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    config = f'[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {marker}; false"\n'
    (ws / ".git" / "config").write_text(config)
    (ws / "a.py").write_text("x = 1\n")
    assert uncommitted_changes(ws) == ["?? a.py"]
    assert not marker.exists()


def test_a_planted_filter_runs_nothing_on_the_host(repo, tmp_path):
    """The same with a filter driver a .gitattributes picks (git status cleans a file it must re-read)."""
    marker = tmp_path.parent / f"{tmp_path.name}-filter-ran"  # not in the repository
    (repo / ".gitattributes").write_text("*.py filter=planted\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    git(repo, "config", "filter.planted.clean", f"touch {marker}; cat")
    (repo / "a.py").write_text("x = 2\n")  # the same size: git must read it to know
    assert uncommitted_changes(repo) == [" M a.py"]
    assert not marker.exists()
