"""view / list_files / grep on real files."""

from __future__ import annotations

import os

import pytest

from deltaserve.tools.files import grep, list_files, view
from deltaserve.tools.workspace import WorkspaceError


@pytest.fixture
def repo(workspace):
    files = {
        ".gitignore": "*.pyc\nbuild/\n/secret.env\n!keep.pyc\n",
        "pkg/mod.py": "".join(f"line {i}\n" for i in range(1, 51)),
        "pkg/__init__.py": "",
        "pkg/cache.pyc": b"\x00\x01",
        "keep.pyc": "kept on purpose\n",
        "build/out.txt": "built\n",
        "secret.env": "KEY=1\n",
        "docs/secret.env": "not ignored: the rule is anchored\n",
        "docs/.gitignore": "*.md\n!README.md\n",
        "docs/guide.md": "guide\n",
        "docs/README.md": "readme TODO\n",
        "img.png": b"\x89PNG\r\n\x1a\n\x00\x00",
        ".git/config": "[core]\n",
        "crlf.txt": b"one\r\ntwo\r\n",
    }
    return workspace(files)


def test_view_window_and_notes(repo):
    out = view(repo, "pkg/mod.py", 10, 12)
    assert out.splitlines() == [
        "pkg/mod.py (lines 10-12 of 50)",
        "[9 lines above not shown]",
        "10 | line 10",
        "11 | line 11",
        "12 | line 12",
        "[38 lines below not shown; view with start=13]",
    ]


def test_view_default_window_is_capped(repo):
    out = view(repo, "pkg/mod.py", max_lines=5)
    assert out.splitlines()[1] == "1 | line 1"
    assert out.splitlines()[-1] == "[45 lines below not shown; view with start=6]"
    full = view(repo, "pkg/mod.py")
    assert "50 | line 50" in full and "not shown" not in full


def test_view_edges(repo):
    assert view(repo, "pkg/__init__.py") == "pkg/__init__.py (empty file)"
    assert view(repo, "crlf.txt").splitlines()[1:] == ["1 | one", "2 | two"]
    assert "lines 49-50 of 50" in view(repo, "pkg/mod.py", 49, 400)
    with pytest.raises(WorkspaceError, match="binary"):
        view(repo, "img.png")
    with pytest.raises(WorkspaceError, match="only 50 lines"):
        view(repo, "pkg/mod.py", 51)
    with pytest.raises(WorkspaceError, match="invalid line range"):
        view(repo, "pkg/mod.py", 5, 2)
    with pytest.raises(WorkspaceError, match=".git"):
        view(repo, ".git/config")
    with pytest.raises(WorkspaceError, match="does not exist"):
        view(repo, "nope.py")


def test_list_files_honours_gitignore(repo):
    assert list_files(repo) == [
        ".gitignore",
        "crlf.txt",
        "docs/.gitignore",
        "docs/README.md",
        "docs/secret.env",
        "img.png",
        "keep.pyc",
        "pkg/__init__.py",
        "pkg/mod.py",
    ]
    assert list_files(repo, "*.py") == ["pkg/__init__.py", "pkg/mod.py"]
    assert list_files(repo, "docs/*") == ["docs/.gitignore", "docs/README.md", "docs/secret.env"]
    assert list_files(repo, max_results=2) == [".gitignore", "crlf.txt"]


def test_list_files_without_gitignore_and_outside_symlinks(workspace, tmp_path):
    ws = workspace({"a.py": "", "b/c.py": ""})
    os.symlink("/etc/passwd", ws.root / "passwd")
    assert list_files(ws) == ["a.py", "b/c.py"]


def test_grep(repo):
    out = grep(repo, r"line 4\d")
    assert out.splitlines()[0] == "pkg/mod.py:40: line 40"
    assert len(out.splitlines()) == 10
    assert grep(repo, "TODO") == "docs/README.md:1: readme TODO"  # guide.md is ignored, the .png skipped
    assert grep(repo, "kept", path_glob="*.py").startswith("no matches")
    assert grep(repo, "todo", ignore_case=True) == "docs/README.md:1: readme TODO"


def test_grep_cap_note(repo):
    out = grep(repo, "line", max_results=5).splitlines()
    assert len(out) == 6
    assert out[-1].startswith("[results capped at 5 matches")


def test_grep_bad_regex(repo):
    with pytest.raises(WorkspaceError, match="invalid regular expression"):
        grep(repo, "(unclosed")


def test_list_files_skips_git_in_any_case_and_gitlinks_and_fifos(workspace):
    ws = workspace({"a.py": "", ".GIT/config": "", "sub/.git": "gitdir: ../.git/modules/sub\n",
                    "sub/b.py": ""})
    os.mkfifo(ws.root / "pipe")
    os.symlink("a.py", ws.root / "link.py")  # a symlink inside the workspace stays
    assert list_files(ws) == ["a.py", "link.py", "sub/b.py"]
