"""Lending a workspace to the sandbox's unprivileged uid for one run, and giving everything back after it.

As root the sandboxed command has no capability, so it can write only what its own uid owns: the workspace's
files and folders are lent to it (chowned) before the run and returned after, together with what the run
created. Both walks are iterative (a test can nest folders deeper than Python's recursion limit) and never
follow links.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path


def tree(root: Path, skip: Iterable[str] = ()) -> Iterator[tuple[str, os.stat_result]]:
    """`root` and every entry below it with its lstat, parents before children, links not followed;
    the paths in `skip` are left out with everything below them."""
    skipped = set(skip)
    yield str(root), os.lstat(root)
    folders = [str(root)]
    while folders:
        try:
            with os.scandir(folders.pop()) as scan:
                entries = list(scan)
        except OSError:
            continue  # gone meanwhile, or too deep to name
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.path in skipped:
                continue
            yield entry.path, st
            if stat.S_ISDIR(st.st_mode):
                folders.append(entry.path)


def lend(root: Path, uid: int, skip: Iterable[str] = ()) -> tuple[int, int]:
    """Give `uid` what the owner of `root` owns under it (`skip` aside); the owner's (uid, gid), for
    give_back. Files with several links stay: the same file may be outside the workspace too (uv links
    its cache into virtual environments)."""
    owner = _owner(root, uid)
    for path, st in tree(root, skip):
        if st.st_uid != owner[0] or stat.S_ISLNK(st.st_mode):
            continue
        if stat.S_ISDIR(st.st_mode) or st.st_nlink == 1:
            try:
                os.lchown(path, uid, -1)
            except OSError:
                continue  # gone meanwhile
    return owner


def give_back(root: Path, uid: int, owner: tuple[int, int] | None = None) -> None:
    """What `uid` (or its group) owns under `root` goes to `owner` (uid, gid): the one lend returned, else
    the owner of `root` itself."""
    owner = owner or _owner(root, uid)
    for path, st in tree(root):
        new_uid = owner[0] if st.st_uid == uid else -1
        new_gid = owner[1] if st.st_gid == uid else -1
        if (new_uid, new_gid) != (-1, -1):
            try:
                os.lchown(path, new_uid, new_gid)
            except OSError:
                continue  # gone meanwhile


def _owner(root: Path, uid: int) -> tuple[int, int]:
    """The owner of `root`, or of its parent where a run that never gave it back left `root` to `uid`."""
    st = os.stat(root)
    if st.st_uid == uid:
        st = os.stat(Path(root).resolve().parent)
    return st.st_uid, st.st_gid
