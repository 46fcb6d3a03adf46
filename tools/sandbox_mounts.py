"""What the bwrap sandbox sees of the host's filesystem: the mount arguments, in the order they apply.

Over the root filesystem (read-only):
  * /dev read-only, with a size-capped /dev/shm; size-capped private /tmp, /var/tmp and /run;
  * the caller's home directory hidden (an empty, read-only tmpfs), and as root also every folder the
    sandbox's unprivileged uid could not enter (so what is bound back below it can still be reached);
  * bound back read-only where they were hidden, what commands need to run: the interpreter, the
    toolchains TOOLCHAIN_VARS name, the PATH and PYTHONPATH folders, the user's site-packages
    (`~/.local`), each with the credential files such folders keep (SECRET_FILES) hidden;
  * the workspace, writable; inside it read-only, its .git and its virtual environments (a `.pth` file
    dropped in one runs in the next host start of that Python).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

PRIVATE_DIRS = ("/tmp", "/var/tmp", "/run")  # empty and in memory inside the sandbox
# Toolchains that find themselves through HOME (rustup, cargo, pyenv, nvm, go's modules): with HOME inside
# the sandbox they would not, so their variables point at the caller's (read-only inside, no credentials)
TOOLCHAIN_HOMES = {"RUSTUP_HOME": ".rustup", "CARGO_HOME": ".cargo", "PYENV_ROOT": ".pyenv",
                   "NVM_DIR": ".nvm", "GOPATH": "go"}
TOOLCHAIN_VARS = frozenset({*TOOLCHAIN_HOMES, "GOROOT", "GOMODCACHE", "GOFLAGS", "JAVA_HOME"})
USER_SITE = (".local/bin", ".local/lib")  # `pip install --user` and pipx's programs and packages
# credential files toolchains keep in their own folders (cargo's registry token, npm's, pip's, git's)
SECRET_FILES = ("credentials", "credentials.toml", ".npmrc", ".netrc", ".pypirc", ".git-credentials")
# how far below the workspace's root virtual environments are looked for: a monorepo's projects (two levels
# down, as tests.PROJECT_DEPTH) keep theirs one below; tox's and nox's are .tox/<env>, .nox/<env>
VENV_DEPTH = 3
NO_VENVS_IN = frozenset({".git", "node_modules", "__pycache__"})


def under(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def mounts(root: Path, env: Mapping[str, str], tmp_bytes: int, as_root: bool) -> list[str]:
    """bwrap's filesystem arguments for a command in workspace `root` with environment `env`; `as_root`:
    the command runs as an unprivileged uid the caller's files do not belong to."""
    workspace = str(root)
    inside, outside = _split(read_only_in_workspace(root, env), workspace)
    tools = [p for p in _tool_paths(env, outside) if not under(p, workspace)]
    hidden = _hidden_dirs(workspace, tools, as_root)
    args = ["--ro-bind", "/", "/", "--proc", "/proc", *_devices(tmp_bytes), *_private(tmp_bytes)]
    for folder in hidden:
        args += ["--tmpfs", folder]
    bound: list[str] = []
    for path in tools:  # those hidden, each once (not again below a folder bound already)
        if _below(path, hidden) and not any(under(path, b) for b in bound):
            bound.append(path)
    args += _open_mount_points([*bound, workspace], hidden)
    for path in bound:
        args += ["--ro-bind", path, path]
    args += _masked_secrets(tools)
    args += ["--bind", workspace, workspace]
    for path in inside:
        args += ["--ro-bind", path, path]
    for folder in hidden:  # last: binding below a folder creates mount points in it
        args += ["--remount-ro", folder]
    return args


def read_only_in_workspace(root: Path, env: Mapping[str, str]) -> list[str]:
    """The workspace's .git (its history is not the tests' to rewrite) and the virtual environments in it
    or used by the command (the interpreter's prefix, wherever it lives), as real paths."""
    found = [str(root / ".git")] if (root / ".git").exists() and not (root / ".git").is_symlink() else []
    found += [os.path.realpath(p) for p in _venvs_below(root, VENV_DEPTH)]
    found += [os.path.realpath(p) for p in (sys.prefix, env.get("VIRTUAL_ENV", "")) if p and os.path.isdir(p)]
    return sorted(set(found), key=lambda p: (p.count("/"), p))


def _split(paths: list[str], workspace: str) -> tuple[list[str], list[str]]:
    return [p for p in paths if under(p, workspace)], [p for p in paths if not under(p, workspace)]


def _venvs_below(folder: Path, depth: int) -> Iterable[Path]:
    """Folders holding a pyvenv.cfg at most `depth` levels below `folder` (links to them included)."""
    try:
        children = [c for c in folder.iterdir() if c.name not in NO_VENVS_IN and c.is_dir()]
    except OSError:
        return
    for child in children:
        if (child / "pyvenv.cfg").is_file():
            yield child
        elif depth > 1 and not child.is_symlink():
            yield from _venvs_below(child, depth - 1)


def _devices(tmp_bytes: int) -> list[str]:
    """bwrap's minimal /dev, read-only (it is an uncapped tmpfs), and a capped /dev/shm for semaphores."""
    return ["--dev", "/dev", "--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev"]


def _private(tmp_bytes: int) -> list[str]:
    args = []
    for private in PRIVATE_DIRS:
        if os.path.isdir(private) and not os.path.islink(private):
            args += ["--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", private]
    return args


def _tool_paths(env: Mapping[str, str], venvs: list[str]) -> list[str]:
    """Folders the command may need to read outside the workspace: the interpreter, toolchains, PATH and
    PYTHONPATH entries, the user's site-packages, virtual environments linked from the workspace."""
    home = os.path.expanduser("~")
    listed = [sys.prefix, sys.base_prefix, os.path.dirname(sys.executable), *venvs,
              *(env[var] for var in TOOLCHAIN_VARS if var in env),
              *env.get("PATH", "").split(os.pathsep), *env.get("PYTHONPATH", "").split(os.pathsep),
              *(os.path.join(home, sub) for sub in USER_SITE)]
    found = set()
    for path in filter(os.path.isabs, listed):
        if os.path.isdir(path):
            found |= {os.path.normpath(path), os.path.realpath(path)}
    # never a folder that holds the home directory (PATH=~/:... would bring all of it back)
    kept = [p for p in found if not under(home, p)]
    return sorted(kept, key=lambda p: (p.count("/"), p))


def _hidden_dirs(workspace: str, tools: list[str], as_root: bool) -> list[str]:
    """The home directory (unless the workspace holds it), and as root the topmost folders on the way to
    the workspace or a tool that others may not enter (the sandbox's uid is one of those others)."""
    home = os.path.realpath(os.path.expanduser("~"))
    hidden = [home] if home != "/" and os.path.isdir(home) and not under(home, workspace) else []
    for path in [workspace, *tools] if as_root else []:
        closed = _first_closed_ancestor(path)
        if closed and not any(under(closed, p) for p in (*hidden, *PRIVATE_DIRS)):
            hidden.append(closed)
    return sorted(set(hidden), key=lambda p: (p.count("/"), p))


def _below(path: str, hidden: list[str]) -> bool:
    """Whether `path` lies inside one of the `hidden` folders or a private one (not just is one)."""
    return any(under(path, h) and path != h for h in (*hidden, *PRIVATE_DIRS))


def _open_mount_points(paths: list[str], hidden: list[str]) -> list[str]:
    """The folders above `paths` that bwrap creates inside a tmpfs, made 0755 first: it would give them the
    host folder's mode, and a closed one (pytest's, mkdtemp's) would bar the sandbox's uid from below."""
    folders = {str(parent) for path in paths for parent in Path(path).parents if _below(str(parent), hidden)}
    args = []
    for folder in sorted(folders, key=lambda p: (p.count("/"), p)):
        args += ["--perms", "0755", "--dir", folder]
    return args


def _first_closed_ancestor(path: str) -> str | None:
    """The topmost proper ancestor of `path` that others may not enter, if any."""
    parts = Path(path).parts
    for n in range(2, len(parts)):
        ancestor = os.path.join(*parts[:n])
        try:
            if not os.stat(ancestor).st_mode & stat.S_IXOTH:
                return ancestor
        except OSError:
            return None
    return None


def _masked_secrets(tools: list[str]) -> list[str]:
    """/dev/null over each credential file a tool folder keeps."""
    args = []
    for folder in tools:
        for name in SECRET_FILES:
            secret = os.path.join(folder, name)
            if os.path.isfile(secret) and not os.path.islink(secret):
                args += ["--ro-bind", "/dev/null", secret]
    return args
