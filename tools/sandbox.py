"""Where a test command runs: `bwrap` isolates it with bubblewrap, `none` runs it with the caller's rights.

Tests execute model-written code. Under `bwrap` that code sees the root filesystem read-only and the caller's
home directory hidden, except what its tools need, read-only and without credential files
(sandbox_mounts.py); only the workspace (not its .git nor its virtual environments) and private, size-capped
/tmp, /var/tmp, /run and /dev/shm are writable; it has a network namespace of its own (its own loopback,
never the host's, and no route out), a PID namespace of its own (nothing it starts outlives the run), a
session keyring of its own (not the caller's keys), HOME inside the private /tmp (toolchains installed under
the caller's home, such as rustup's, are still found: TOOLCHAIN_HOMES), an allow-listed environment (no API
keys) and per-process resource limits (CPU seconds, address space, processes, open files, file size) set
with prlimit, which nothing inside can raise.

The kernel does not apply the process limit to uid 0, so as root the command runs as an unprivileged uid
(OUTSIDE_ID) with no capability at all: root's files are out of its reach like anyone's (no
CAP_DAC_OVERRIDE), so the workspace is lent to that uid for the run (what the workspace's owner owns there,
its .git and virtual environments aside) and everything that uid owns there afterwards is given back. A
non-root caller needs none of this: its own uid is mapped and the limits bind it.

`choose("auto")` picks bwrap when a trial sandbox starts here, else none with a one-line warning.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import platform
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from deltaserve.errors import SandboxError
from deltaserve.tools.ownership import give_back, lend
from deltaserve.tools.sandbox_mounts import TOOLCHAIN_HOMES, TOOLCHAIN_VARS, mounts, read_only_in_workspace

NAMES = ("auto", "bwrap", "none")
INSTALL_HINT = "apt-get install bubblewrap"
SANDBOX_HOME = "/tmp/home"
ENV_ALLOWED = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "NO_COLOR", "FORCE_COLOR", "CI", "SOURCE_DATE_EPOCH",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONUTF8", "PYTHONIOENCODING",
    "PYTHONWARNINGS", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
})
BWRAP_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_DAC_OVERRIDE")  # as root; the command has none
INSIDE_ID = 1000  # the uid/gid the command has inside the sandbox when the caller is root
OUTSIDE_ID = 2_147_483_646  # ... and the unprivileged uid/gid that is on the host
# keyctl(2)'s number per machine: bwrap starts in a new session keyring (keyrings are not namespaced: the
# caller's session keyring would otherwise be the command's, its keys readable)
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "i686": 288, "i386": 288, "armv7l": 311}
KEYCTL_JOIN_SESSION_KEYRING = 1
FRESH_KEYRING = """import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.syscall({nr}, {join}, None) < 0 and ctypes.get_errno() not in (1, 38):  # EPERM, ENOSYS: no keyctl
    sys.exit("sandbox: no session keyring of its own: " + os.strerror(ctypes.get_errno()))
try:
    os.execvp(sys.argv[1], sys.argv[1:])
except OSError as exc:
    print(f"{{sys.argv[1]}}: {{exc.strerror}}", file=sys.stderr)
    sys.exit(127)
"""
START_TIMEOUT_S = 10.0
CPU_GRACE_S = 5  # a process that handles SIGXCPU gets SIGKILL this much CPU time later

log = logging.getLogger(__name__)


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30


@dataclass(frozen=True)
class Limits:
    """Per-process limits inside the bwrap sandbox (the process count is per sandbox)."""

    cpu_seconds: int = 600
    address_space_bytes: int = field(default_factory=lambda: min(16 << 30, _physical_memory()))
    processes: int = 512  # processes and threads together
    open_files: int = 4096
    file_bytes: int = 1 << 30  # the largest file a process may write
    tmp_bytes: int = 1 << 30  # size of each private /tmp, /var/tmp, /run, /dev/shm (they live in memory)

    def prlimit(self) -> list[str]:
        cpu = f"{self.cpu_seconds}:{self.cpu_seconds + CPU_GRACE_S}"  # SIGXCPU first: a clear cause of death
        return ["prlimit", f"--cpu={cpu}", f"--as={self.address_space_bytes}",
                f"--nproc={self.processes}", f"--nofile={self.open_files}", f"--fsize={self.file_bytes}",
                "--"]


class Sandbox(Protocol):
    name: str

    def environment(self, inherited: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
        """The command's environment from the caller's and the variables asked for explicitly."""

    def spawn(self, argv: list[str], root: Path, env: dict[str, str], **popen: Any) -> subprocess.Popen:
        """Start `argv` with `root` (the workspace) as its working directory."""

    def finish(self, root: Path) -> None:
        """Called once the command and everything it started are gone."""


def toolchain_homes(home: str | None) -> dict[str, str]:
    """TOOLCHAIN_HOMES that exist in the caller's `home`, as variables naming them."""
    if not home:
        return {}
    found = {var: os.path.join(home, sub) for var, sub in TOOLCHAIN_HOMES.items()}
    return {var: path for var, path in found.items() if os.path.isdir(path)}


class NoSandbox:
    """The caller's rights, environment and filesystem (only the timeout and output cap apply)."""

    name = "none"

    def environment(self, inherited: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
        return {**inherited, **extra}

    def spawn(self, argv: list[str], root: Path, env: dict[str, str], **popen: Any) -> subprocess.Popen:
        return subprocess.Popen(argv, cwd=root, env=env, **popen)

    def finish(self, root: Path) -> None:
        pass


class BwrapSandbox:
    name = "bwrap"

    def __init__(self, limits: Limits | None = None, bwrap: str = "bwrap"):
        self.limits = limits or Limits()
        self.bwrap = bwrap
        self._owners: dict[Path, tuple[int, int]] = {}  # as root: each lent workspace's owner (uid, gid)

    def environment(self, inherited: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
        allowed = ENV_ALLOWED | TOOLCHAIN_VARS
        kept = {k: v for k, v in inherited.items() if k in allowed or k.startswith("LC_")}
        fixed = {"HOME": SANDBOX_HOME, "TMPDIR": "/tmp", "USER": "sandbox", "LOGNAME": "sandbox"}
        return {**toolchain_homes(inherited.get("HOME")), **kept, **fixed, **extra}

    def spawn(self, argv: list[str], root: Path, env: dict[str, str], **popen: Any) -> subprocess.Popen:
        if shutil.which(argv[0], path=env.get("PATH")) is None:  # as Popen would say, not bwrap's execvp
            raise FileNotFoundError(2, "No such file or directory", argv[0])
        root = Path(root).resolve()
        if os.geteuid() != 0:
            user = ["--unshare-user", "--disable-userns", "--uid", str(os.getuid()),
                    "--gid", str(os.getgid())]
            return subprocess.Popen(self._command(user, [], argv, root, env), cwd=root, env=env, **popen)
        self._owners[root] = lend(root, OUTSIDE_ID, skip=read_only_in_workspace(root, env))
        try:
            return self._spawn_as_root(argv, root, env, popen)
        except BaseException:
            self.finish(root)
            raise

    def finish(self, root: Path) -> None:
        owner = self._owners.pop(Path(root).resolve(), None)
        if os.geteuid() == 0:
            give_back(Path(root), OUTSIDE_ID, owner)

    def _command(self, user: list[str], setuid: list[str], argv: list[str], root: Path,
                 env: dict[str, str]) -> list[str]:
        args = [*_fresh_keyring(), self.bwrap, *user, "--die-with-parent", "--unshare-pid", "--unshare-net",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += mounts(root, env, self.limits.tmp_bytes, as_root=bool(setuid))
        args += ["--perms", "0777", "--dir", SANDBOX_HOME, "--chdir", str(root), "--"]
        return args + setuid + self.limits.prlimit() + argv

    def _spawn_as_root(self, argv: list[str], root: Path, env: dict[str, str],
                       popen: dict) -> subprocess.Popen:
        """bwrap creates the user namespace and waits; we map INSIDE_ID to OUTSIDE_ID (and root to root, which
        bwrap sets the sandbox up as), then let it go on. setpriv then leaves root for INSIDE_ID, which drops
        every capability: bwrap keeps only those setpriv needs for that and the one its own chdir into the
        lent workspace needs (CAP_DAC_OVERRIDE)."""
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        user = ["--unshare-user", "--info-fd", str(info_w), "--userns-block-fd", str(block_r),
                "--cap-drop", "ALL"]
        user += [arg for cap in BWRAP_CAPS for arg in ("--cap-add", cap)]
        setuid = ["setpriv", f"--reuid={INSIDE_ID}", f"--regid={INSIDE_ID}", "--clear-groups",
                  "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
        try:
            proc = subprocess.Popen(self._command(user, setuid, argv, root, env), cwd=root,
                                    env=_trust_repo(env, root), pass_fds=(info_w, block_r), **popen)
        finally:
            os.close(info_w)
            os.close(block_r)
        try:
            pid = _child_pid(info_r)
            for kind in ("uid", "gid"):
                with open(f"/proc/{pid}/{kind}_map", "w") as fh:
                    fh.write(f"0 0 1\n{INSIDE_ID} {OUTSIDE_ID} 1\n")
            os.write(block_w, b"1")
        except (OSError, ValueError) as exc:
            proc.kill()
            said = proc.communicate()[0] if proc.stdout else b""
            raise OSError(f"bwrap did not start ({exc}): {said.decode(errors='replace').strip()}") from None
        finally:
            os.close(info_r)
            os.close(block_w)
        return proc


def _fresh_keyring() -> list[str]:
    """A trampoline that joins a new, empty session keyring and then execs bwrap (our Python, -I -S: no
    site, nothing from the environment); nothing where keyctl's number here is unknown."""
    nr = KEYCTL_SYSCALL.get(platform.machine())
    if nr is None:
        _warn_once(f"deltaserve: the sandbox shares the caller's session keyring on {platform.machine()}")
        return []
    # /proc/self/exe: this very interpreter even where the path to it is closed to us (run as another uid)
    python = sys.executable if os.access(sys.executable, os.X_OK) else "/proc/self/exe"
    return [python, "-I", "-S", "-c", FRESH_KEYRING.format(nr=nr, join=KEYCTL_JOIN_SESSION_KEYRING)]


def _trust_repo(env: dict[str, str], root: Path) -> dict[str, str]:
    """Git refuses a repository its user does not own; the workspace's owner is not the sandbox's uid."""
    n = int(env.get("GIT_CONFIG_COUNT", "0"))
    return {**env, "GIT_CONFIG_COUNT": str(n + 1), f"GIT_CONFIG_KEY_{n}": "safe.directory",
            f"GIT_CONFIG_VALUE_{n}": str(root)}


def _child_pid(info_fd: int) -> int:
    """The sandbox's first process (host pid) from bwrap's --info-fd JSON."""
    buf = b""
    while True:
        ready, _, _ = select.select([info_fd], [], [], START_TIMEOUT_S)
        chunk = os.read(info_fd, 4096) if ready else b""
        if not chunk:
            raise ValueError("bwrap exited or stalled before creating the sandbox")
        buf += chunk
        try:
            return int(json.loads(buf)["child-pid"])
        except json.JSONDecodeError:
            continue  # not all of it yet


@functools.cache
def bwrap_problem(bwrap: str = "bwrap") -> str | None:
    """Why the bwrap sandbox cannot run here, or None when it can (a trial sandbox, once per process)."""
    if shutil.which(bwrap) is None:
        return "bubblewrap (bwrap) is not installed"
    for tool in ("prlimit", "setpriv") if os.geteuid() == 0 else ("prlimit",):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) is not installed"
    box = BwrapSandbox(bwrap=bwrap)
    with tempfile.TemporaryDirectory(prefix="deltaserve-sandbox-probe-") as tmp:
        try:
            proc = box.spawn(["true"], Path(tmp), box.environment(os.environ, {}), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            said = proc.communicate(timeout=START_TIMEOUT_S)[0].decode(errors="replace").strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap cannot start a sandbox here ({exc})"
        finally:
            box.finish(Path(tmp))
        if proc.returncode != 0:
            why = said.splitlines()[-1] if said else f"exit code {proc.returncode}"
            return f"bubblewrap cannot start a sandbox here ({why})"
    return None


@functools.cache
def _warn_once(message: str) -> None:
    log.warning(message)


def choose(name: str = "auto", limits: Limits | None = None) -> Sandbox:
    """The sandbox called `name` (auto, bwrap, none); SandboxError if bwrap was asked for and cannot run."""
    if name not in NAMES:
        raise SandboxError(f"unknown sandbox {name!r}: choose one of {', '.join(NAMES)}")
    if name == "none":
        return NoSandbox()
    problem = bwrap_problem()
    if problem is None:
        return BwrapSandbox(limits)
    if name == "bwrap":
        raise SandboxError(f"the bwrap sandbox cannot run: {problem}; install it with `{INSTALL_HINT}`")
    _warn_once(f"deltaserve: {problem}, so tests run WITHOUT a sandbox; install it with `{INSTALL_HINT}`")
    return NoSandbox()
