"""Never lose user work: refuse a git checkout with uncommitted changes (unless allowed), or work on a
copy; remember every file's original text before the first edit so the run can show its final diff."""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from deltaserve.errors import DirtyWorkspaceError
from deltaserve.tools.host_git import run_git

_CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})  # left out of a copy
# installed environments: linked from a copy, not copied (big, and a test command may name them:
# `.venv/bin/python -m pytest` must still run in the copy)
_ENVIRONMENTS = frozenset({".venv", "venv", "node_modules"})


def uncommitted_changes(root: Path) -> list[str] | None:
    """`git status --porcelain` lines for a git work tree (untracked files included); None if not git.
    The workspace's tests may have planted the .git found here, so git runs nothing its config names
    (tools.host_git), and changes inside submodules are not looked at (git would run itself in each, under
    the submodule's config); a submodule moved to another commit still shows."""
    try:
        inside = run_git(root, "rev-parse", "--is-inside-work-tree", timeout=30)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return None
        status = run_git(root, "status", "--porcelain", "--ignore-submodules=dirty", "--", ".", timeout=60,
                         check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return [line for line in status.stdout.splitlines() if line.strip()]


def check_clean(root: Path) -> None:
    changes = uncommitted_changes(root)
    if changes:
        listed = "\n  ".join(changes[:10]) + ("\n  ..." if len(changes) > 10 else "")
        raise DirtyWorkspaceError(
            f"{root} has uncommitted changes the agent could overwrite:\n  {listed}\n"
            "Commit or stash them first, or pass --copy to work on a temporary copy, "
            "or --allow-dirty to edit in place anyway.")


def make_copy(root: Path) -> Path:
    """A temporary copy of the workspace: caches left out, installed environments (a virtualenv,
    node_modules) linked to the original's rather than copied."""
    source = Path(root).resolve()
    target = Path(tempfile.mkdtemp(prefix="deltaserve-fix-")) / source.name
    environments: list[Path] = []

    def ignored(folder: str, names: list[str]) -> set[str]:
        here = [name for name in names if name in _ENVIRONMENTS and os.path.isdir(os.path.join(folder, name))]
        environments.extend(Path(folder, name) for name in here)
        return {name for name in names if name in _CACHES} | set(here)

    shutil.copytree(source, target, symlinks=True, ignore=ignored)
    for env in environments:
        (target / env.relative_to(source)).symlink_to(env, target_is_directory=True)
    return target


class Snapshot:
    """Original text of each file, captured before the agent first writes it."""

    def __init__(self, workspace):
        self.workspace = workspace
        self.originals: dict[str, str | None] = {}

    def remember(self, paths: list[str]) -> None:
        for path in paths:
            if path not in self.originals:
                self.originals[path] = self.workspace.read_text(path) if self.workspace.exists(path) else None

    def diff(self) -> str:
        """Unified diff (a/ b/ prefixes) from the originals to what is on disk now."""
        out = []
        for path, before in self.originals.items():
            after = self.workspace.read_text(path) if self.workspace.exists(path) else None
            if before == after:
                continue
            out += difflib.unified_diff((before or "").splitlines(keepends=True),
                                        (after or "").splitlines(keepends=True),
                                        fromfile=f"a/{path}" if before is not None else "/dev/null",
                                        tofile=f"b/{path}" if after is not None else "/dev/null")
        no_newline = "\n\\ No newline at end of file\n"
        return "".join(line if line.endswith("\n") else line + no_newline for line in out)
