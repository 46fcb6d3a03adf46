"""`deltaserve bench replay`: a real git history built here, replayed through every edit format."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from deltaserve.cli import main as cli_main
from deltaserve.evals.bench.replay_commits import FORMATS, classify, replay

CALC = ("import math\n\n\ndef area(r):\n    return math.pi * r * r\n\n\ndef volume(r, h):\n"
        "    return area(r) * h\n")
STACK = ("class Stack:\n    __slots__ = ('_items',)\n\n    @property\n    def top(self):\n"
         "        return self._items[0]\n\n    @top.setter\n    def top(self, value):\n"
         "        self._items[0] = value\n\n    def push(self, x):\n        self._items.insert(0, x)\n")
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def commit(repo: Path, files: dict[str, str | bytes | None], message: str) -> None:
    for path, content in files.items():
        target = repo / path
        if content is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content if isinstance(content, bytes) else content.encode())
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=ENV)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=ENV)
    commit(repo, {"pkg/calc.py": CALC, "pkg/stack.py": STACK, "NOTES.txt": "todo\n",
                  "logo.png": b"\x89PNG\0"}, "initial")
    # a helper written above the function that now uses it
    commit(repo, {"pkg/calc.py": CALC.replace("def area(r):\n    return math.pi * r * r",
                                              "def _square(x):\n    return x * x\n\n\ndef area(r):\n"
                                              "    return math.pi * _square(r)")}, "area: a helper")
    # a property's getter changes; its setter and the class's __slots__ stay
    commit(repo, {"pkg/stack.py": STACK.replace("return self._items[0]", "return self._items[-1]")}, "top")
    commit(repo, {"pkg/new_module.py": "VALUE = 1\n", "NOTES.txt": None}, "a file added, one deleted")
    commit(repo, {"logo.png": b"\x89PNG\0\1"}, "a binary change: skipped")
    return repo


def test_every_format_replays_the_history_exactly(history):
    results = replay(history, "HEAD", 10, list(FORMATS), max_files=20)
    seen = [(r.format, r.paths, r.outcome, r.detail) for r in results]
    assert all(r.outcome == "exact" for r in results), seen
    by_format = {f: sum(1 for r in results if r.format == f) for f in FORMATS}
    # udiff and udiff-loose: 3 commits (the binary one is skipped); search_replace: 2 (modified files only);
    # symbol: the 2 Python modifications
    assert by_format == {"udiff": 3, "udiff-loose": 3, "search_replace": 2, "symbol": 2}, seen


def test_the_cli_prints_the_table_and_exits_zero_without_wrong_results(history, capsys):
    code = cli_main(["bench", "replay", "--repo", str(history), "--commits", "10",
                     "--formats", "udiff,symbol"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Real commits as model replies" in out and "100.0%" in out and "search_replace" not in out


def test_an_unknown_format_or_a_non_repository_is_a_clear_error(tmp_path, capsys):
    assert cli_main(["bench", "replay", "--repo", str(tmp_path), "--formats", "diff3"]) == 2
    assert "unknown format(s) diff3" in capsys.readouterr().err
    assert cli_main(["bench", "replay", "--repo", str(tmp_path)]) == 2
    assert "git failed" in capsys.readouterr().err


@pytest.mark.parametrize(("got", "want", "outcome"), [
    (b"def f():\n    pass\n", b"def f():\n    pass\n", "exact"),
    (b"def f():\n\n    pass\n", b"def f():\n    pass\n", "formatting"),
    (b"<svg/>\n", b"<svg/>", "formatting"),
    (b"def g():\n    pass\n\n\ndef f():\n    pass\n", b"def f():\n    pass\n\n\ndef g():\n    pass\n",
     "reordered"),
    (b"class A:\n    def b(self): pass\n    def a(self): pass\n",
     b"class A:\n    def a(self): pass\n    def b(self): pass\n", "reordered"),
    (b"def f():\n    return 1\n", b"def f():\n    return 2\n", "wrong"),
    (None, b"x = 1\n", "wrong"),
    (b"not python (\n", b"not python\n", "wrong"),
])
def test_outcomes(got, want, outcome):
    assert classify(got, want) == outcome
