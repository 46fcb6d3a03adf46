"""What a SWE-bench instance must satisfy before import-swebench touches the host for it. A JSONL file is
input from anywhere: its `repo` picks a folder, its patches name paths and may create symbolic links, its
test ids become a command line. Each check raises InstanceImportError with the reason, so that instance is
reported and skipped and the others are still imported.
"""

from __future__ import annotations

import posixpath
import re

from deltaserve.errors import InstanceImportError

OWNER_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
# the test command is one argument to `sh -c`, and Linux caps one argument at 128 KiB (MAX_ARG_STRLEN)
MAX_COMMAND_BYTES = 100_000
_SECTION = re.compile(r"^diff --git ", re.MULTILINE)
_LINK_MODE = re.compile(r"^new (file )?mode 120000$", re.MULTILINE)
_TARGET_NAME = re.compile(r"^\+\+\+ (?:b/)?(.+?)\t?$", re.MULTILINE)


def check_repo(repo: str) -> tuple[str, str]:
    """(owner, name) of an `owner/name` repo field: one plain folder name each, never '.' or '..' (an
    absolute path or a '..' would pick a clone outside --repos)."""
    owner, _, name = repo.partition("/")
    if not OWNER_NAME.match(repo) or {owner, name} & {".", ".."}:
        raise InstanceImportError(f"repo {repo!r} is not of the form owner/name")
    return owner, name


def check_paths(paths: list[str]) -> None:
    """Every path a patch names is relative and stays in the repository (git apply may accept a patch whose
    other header line names an absolute path)."""
    for path in paths:
        if not path or path.startswith("/") or ".." in path.split("/"):
            raise InstanceImportError(f"a patch names {path!r}, a path outside the repository")


def check_links(diff: str, what: str) -> None:
    """No symbolic link the patch creates points outside the repository: copying the task's files would
    bring its target along (a home directory, a root-only file)."""
    for section in _SECTION.split(diff)[1:]:
        if not _LINK_MODE.search(section):
            continue
        name = _TARGET_NAME.search(section)
        path = name.group(1) if name else section.split("\n", 1)[0]
        target = "".join(line[1:] for line in _added_lines(section))
        if posixpath.isabs(target) or posixpath.normpath(posixpath.join(posixpath.dirname(path),
                                                                        target)).startswith(".."):
            raise InstanceImportError(f"{what} adds a symbolic link to a path outside the repository: "
                                      f"{path} -> {target}")


def _added_lines(section: str) -> list[str]:
    body = section.split("\n@@", 1)[1] if "\n@@" in section else ""
    return [line for line in body.split("\n")[1:] if line.startswith("+")]


def check_command(command: str, ids: int) -> None:
    size = len(command.encode())
    if size > MAX_COMMAND_BYTES:
        raise InstanceImportError(f"its test command would be {size:,} bytes ({ids:,} test ids), more than "
                                  f"one command line can carry ({MAX_COMMAND_BYTES:,})")
