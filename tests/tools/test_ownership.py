"""Lending a workspace to the sandbox's uid and giving it back: iterative walks, links never followed, files
with other links never lent (test_sandbox.py runs the same through real bubblewrap)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from deltaserve.tools.ownership import give_back, lend, tree

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
SANDBOX_UID = 2_147_483_646


def test_tree_walks_deeper_than_the_recursion_limit_without_following_links(tmp_path):
    deep = Path(tempfile.mkdtemp(prefix="deltaserve-deep-walk-"))  # not in tmp_path: pytest's rmtree recurses
    try:
        for n in range(1, 1_501):
            (deep / ("d/" * n)).mkdir()
        (deep / "link").symlink_to(tmp_path)
        (tmp_path / "outside.txt").write_text("not to be walked\n")
        paths = [path for path, _ in tree(deep)]
        assert len(paths) == 1 + 1_500 + 1 and not any("outside" in p for p in paths)
    finally:
        subprocess.run(["rm", "-rf", str(deep)], check=True)


@as_root
def test_lend_and_give_back(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside.txt"
    (ws / ".git").mkdir(parents=True)
    (ws / "a.py").write_text("x = 1\n")
    outside.write_text("linked\n")
    os.link(outside, ws / "hard_link.txt")  # the same file outside the workspace: never lent
    (ws / "sym").symlink_to(outside)
    owner = lend(ws, SANDBOX_UID, skip=[str(ws / ".git")])
    assert owner == (os.stat(tmp_path).st_uid, os.stat(tmp_path).st_gid)
    assert [p.stat().st_uid for p in (ws, ws / "a.py")] == [SANDBOX_UID] * 2
    assert {p.lstat().st_uid for p in (ws / ".git", ws / "hard_link.txt", ws / "sym", outside)} == {owner[0]}
    (ws / "made.txt").write_text("by the sandbox\n")
    os.chown(ws / "made.txt", SANDBOX_UID, SANDBOX_UID)
    give_back(ws, SANDBOX_UID, owner)
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in [ws, *ws.rglob("*")]} == {owner}


@as_root
def test_give_back_without_a_record_finds_the_owner_even_of_a_root_left_lent(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f").write_text("")
    os.chown(ws, SANDBOX_UID, -1)  # a run that never gave it back
    os.chown(ws / "f", SANDBOX_UID, SANDBOX_UID)
    give_back(ws, SANDBOX_UID)
    parent = os.stat(tmp_path)
    assert {(p.stat().st_uid, p.stat().st_gid) for p in (ws, ws / "f")} == {(parent.st_uid, parent.st_gid)}
