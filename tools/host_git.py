"""Git run on the host in folders a sandboxed test may have written: nothing the repository's own files say
makes git run a command.

A test can plant `.git/HEAD` + `.git/config` in a workspace that had no .git of its own (a plain folder, a
repository's subfolder), or a submodule's .git, or a .gitattributes. Git obeys the repository's config, and
several of its keys name commands git runs: core.fsmonitor (git status runs it), hooks (core.hooksPath, or
the planted .git/hooks), filter drivers picked by .gitattributes (clean, smudge, process: status, apply and
checkout run them), diff drivers (diff.external, diff.<driver>.command and textconv), pagers, transports
(a partial clone's lazy fetch with remote.*.uploadpack, core.sshCommand), gpg.program under
log.showSignature, git gc --auto. Configuration given on the command line (here GIT_CONFIG_KEY_n, which
takes any name as it is) overrides the repository's, so every call sets SAFE_CONFIG, and disables each
filter driver the repository's config defines by its name (listed first with `git config`, which runs
nothing); commands that diff get --no-ext-diff --no-textconv. The system and global configuration are not
read either, so a run does not depend on them.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SAFE_CONFIG = {
    "core.fsmonitor": "false",
    "core.hooksPath": "/dev/null",  # no hook is found there
    "core.pager": "cat",
    "core.sshCommand": "false",
    "protocol.allow": "never",  # no transport at all: no fetch, so no command a remote's config names
    "credential.helper": "",  # an empty value clears the list
    "log.showSignature": "false",  # gpg.program is not run
    "gc.auto": "0",
    "maintenance.auto": "false",
    "submodule.recurse": "false",
    "diff.ignoreSubmodules": "dirty",  # git status would run itself in each submodule, under its config
}
FILTER_COMMANDS = ("clean", "smudge", "process")  # an empty command is no command
DIFFING = frozenset({"diff", "show", "log"})  # subcommands that take --no-ext-diff --no-textconv
LIST_TIMEOUT_S = 30.0


def run_git(repo: Path | str, *args: str, input: str | bytes | None = None, text: bool = True,
            check: bool = False, timeout: float | None = None) -> subprocess.CompletedProcess:
    """`git -C repo *args` as subprocess.run would run it (output captured), with the repository unable
    to make git run anything (module docstring)."""
    env = _environment()
    env = _with_config(env, {**SAFE_CONFIG, **_disabled_filters(repo, env, timeout)})
    if args and args[0] in DIFFING:
        args = (args[0], "--no-ext-diff", "--no-textconv", *args[1:])
    return subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True, text=text,
                          check=check, timeout=timeout, env=env)


def _environment() -> dict[str, str]:
    """Ours without the caller's GIT_* variables (GIT_DIR would name another repository), reading neither
    the system's nor the user's configuration, never prompting, never taking the index lock for status."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0"}


def _with_config(env: dict[str, str], config: dict[str, str]) -> dict[str, str]:
    """`config` as command-line configuration (GIT_CONFIG_COUNT, GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n)."""
    pairs = {f"GIT_CONFIG_KEY_{n}": key for n, key in enumerate(config)}
    pairs |= {f"GIT_CONFIG_VALUE_{n}": value for n, value in enumerate(config.values())}
    return {**env, "GIT_CONFIG_COUNT": str(len(config)), **pairs}


def _disabled_filters(repo: Path | str, env: dict[str, str], timeout: float | None) -> dict[str, str]:
    """Every filter driver the repository's configuration defines, turned off by name."""
    names = _config_names(repo, env, timeout)
    drivers = {name[len("filter."):].rpartition(".")[0] for name in names if name.startswith("filter.")}
    off = {f"filter.{driver}.{command}": "" for driver in drivers if driver for command in FILTER_COMMANDS}
    return off | {f"filter.{driver}.required": "false" for driver in drivers if driver}


def _config_names(repo: Path | str, env: dict[str, str], timeout: float | None) -> list[str]:
    """The names of the configuration git sees in `repo` (includes followed); none where git cannot read
    it (then the command itself stops at the same place, before running anything). A timeout (an include
    of a FIFO) is raised, as the command's own would be."""
    listed = subprocess.run(["git", "-C", str(repo), "config", "-z", "--name-only", "--list"],
                            capture_output=True, env=env, timeout=timeout or LIST_TIMEOUT_S)
    return [os.fsdecode(name) for name in listed.stdout.split(b"\0") if name]
