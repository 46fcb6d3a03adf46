"""tools.host_git against a repository whose config and hooks are traps (as a test could plant them): every
command the host runs (workspace_guard's status, swebench_import's worktree and apply, replay_commits'
rev-list, diff and show) runs none of them, where plain git runs them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deltaserve.tools.host_git import run_git

TRAPS = ("FSMONITOR", "CLEAN", "SMUDGE", "PROCESS", "ODD_NAME", "DIFF_COMMAND", "INCLUDED", "HOOK")
HOOKS = ("post-checkout", "reference-transaction", "post-index-change", "pre-auto-gc")


def _plain_git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def _trap(marker: Path, name: str) -> str:
    return f"touch {marker / name}; cat"


@pytest.fixture
def trapped(tmp_path):
    """A repository with one commit on top of another; every config key and hook that names a command
    touches a file under markers/ (named after the trap) when git runs it; the files modified since."""
    repo, markers = tmp_path / "repo", tmp_path / "markers"
    markers.mkdir()
    repo.mkdir()
    _plain_git(repo, "init", "-q")
    for step in ("one\n", "two\n"):
        for name in ("f.txt", "g.odd", "h.proc", "i.inc"):
            (repo / name).write_text(step)
        (repo / ".gitattributes").write_text(
            "*.txt filter=evil diff=evil\n*.odd filter=x=y\n*.proc filter=proc\n*.inc filter=included\n")
        _plain_git(repo, "add", "-A")
        _plain_git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", step)
    (tmp_path / "included.cfg").write_text(f'[filter "included"]\n\tclean = "{_trap(markers, "INCLUDED")}"\n')
    config = {
        "core.fsmonitor": _trap(markers, "FSMONITOR"), "filter.evil.clean": _trap(markers, "CLEAN"),
        "filter.evil.smudge": _trap(markers, "SMUDGE"), "filter.proc.process": _trap(markers, "PROCESS"),
        "filter.evil.required": "true", "filter.x=y.clean": _trap(markers, "ODD_NAME"),
        "diff.evil.textconv": _trap(markers, "TEXTCONV"), "diff.evil.command": _trap(markers, "DIFF_COMMAND"),
        "diff.external": _trap(markers, "EXTERNAL"), "include.path": str(tmp_path / "included.cfg"),
        # and those that need more than this repository to spring: a signed commit, a full object store
        "log.showSignature": "true", "gpg.program": _trap(markers, "GPG"), "gc.auto": "1",
    }
    for key, value in config.items():
        subprocess.run(["git", "config", "--file", str(repo / ".git" / "config"), key, value], check=True)
    for hook in HOOKS:
        path = repo / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {markers / 'HOOK'}\n")
        path.chmod(0o755)
    for name in ("f.txt", "g.odd", "h.proc", "i.inc"):
        (repo / name).write_text("TWO\n")  # the same size: git must read it (through the filter) to know
    return repo, markers


def _sprung(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def test_plain_git_springs_the_traps(trapped):
    """The traps are real: git as the host used to run it executes the planted commands."""
    repo, markers = trapped
    _plain_git(repo, "status", "--porcelain")  # the fsmonitor hook answers "nothing changed", so ...
    _plain_git(repo, "-c", "core.fsmonitor=false", "status", "--porcelain")  # ... the filters, without it
    _plain_git(repo, "diff", "HEAD~1", "HEAD")
    _plain_git(repo, "worktree", "add", "--detach", str(repo.parent / "wt"), "HEAD~1")
    assert set(_sprung(markers)) == set(TRAPS)


def test_status_and_rev_parse_run_nothing(trapped):
    repo, markers = trapped
    assert run_git(repo, "rev-parse", "--is-inside-work-tree").stdout.strip() == "true"
    status = run_git(repo, "status", "--porcelain", "--", ".", check=True)
    assert status.stdout.splitlines() == [" M f.txt", " M g.odd", " M h.proc", " M i.inc"], status.stderr
    assert _sprung(markers) == []


def test_history_reads_run_nothing(trapped):
    repo, markers = trapped
    commits = run_git(repo, "rev-list", "--no-merges", "--min-parents=1", "HEAD", text=False, check=True)
    assert len(commits.stdout.split()) == 1
    raw = run_git(repo, "diff", "--raw", "--no-renames", "--numstat", "-z", "HEAD~1", "HEAD", check=True)
    assert "f.txt" in raw.stdout
    diff = run_git(repo, "diff", "--no-renames", "HEAD~1", "HEAD", "--", "f.txt", check=True)
    assert "-one\n+two\n" in diff.stdout
    assert run_git(repo, "show", "HEAD:f.txt", check=True).stdout == "two\n"
    assert "+two" in run_git(repo, "show", "HEAD", check=True).stdout
    assert _sprung(markers) == []


def test_worktree_and_apply_run_nothing(trapped):
    repo, markers = trapped
    worktree = repo.parent / "wt"
    run_git(repo, "worktree", "add", "--detach", str(worktree), "HEAD~1", check=True)
    assert (worktree / "f.txt").read_text() == "one\n"
    patch = "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-one\n+uno\n"
    run_git(worktree, "apply", "-", input=patch, check=True)
    assert (worktree / "f.txt").read_text() == "uno\n"
    run_git(repo, "worktree", "remove", "--force", str(worktree), check=True)
    assert _sprung(markers) == []


def test_a_changed_submodule_is_not_entered(trapped, tmp_path):
    """git status runs itself in each submodule with changes, under that submodule's own config."""
    repo, markers = trapped
    sub = tmp_path / "sub"
    sub.mkdir()
    _plain_git(sub, "init", "-q")
    (sub / "x").write_text("one\n")
    (sub / ".gitattributes").write_text("x filter=subs\n")
    _plain_git(sub, "add", "-A")
    _plain_git(sub, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "s")
    _plain_git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "vendored")
    _plain_git(repo / "vendored", "config", "filter.subs.clean", _trap(markers, "SUBMODULE"))
    (repo / "vendored" / "x").write_text("ONE\n")
    for sprung in markers.iterdir():  # by the plain git calls above
        sprung.unlink()
    run_git(repo, "status", "--porcelain", check=True)
    assert _sprung(markers) == []
    _plain_git(repo, "-c", "core.fsmonitor=false", "status", "--porcelain")
    assert "SUBMODULE" in _sprung(markers)  # the trap is real
