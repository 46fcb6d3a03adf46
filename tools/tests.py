"""Run a workspace's test command: own process group, hard timeout, capped output, counts parsed.

The command runs in a new session (so in its own process group). On timeout the whole group gets SIGTERM,
then SIGKILL after a short grace; the group is also killed after a normal exit, so stray children
(`sleep 1000 &` in a test) never outlive the run. Output is read continuously and only a head and a tail
are kept, so a test printing gigabytes costs constant memory and the model sees both ends; past
`max_output_bytes` the group is killed, so it costs no more time either, and the output ends with a note
saying so. Terminal colour codes (a pytest config's `--color=yes`) are taken out of what is kept. The
command runs in a sandbox (sandbox.py: bubblewrap by default when it works here) and the result says which
one.

The workspace's own code comes first on PYTHONPATH (its root, and `src/` or `lib/` where they hold a
package; the same for a monorepo's projects): a project installed in editable mode maps its imports to
where it was installed from, so in a copy of it (`fix --copy`, each candidate's scratch copy, an eval's
task copy) the tests would otherwise import the original code and never see an edit.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from deltaserve.tools.sandbox import Sandbox, choose
from deltaserve.tools.test_output import parse_test_output, without_ansi
from deltaserve.tools.workspace import Workspace

DEFAULT_COMMAND = "python -m pytest -q"
HEAD_BYTES = 8_000
TAIL_BYTES = 16_000
KILL_GRACE_S = 2.0
MAX_OUTPUT_BYTES = 64 << 20
SOURCE_DIRS = ("src", "lib")  # the usual homes of a project's packages besides its root
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
PROJECT_DEPTH = 2  # how far below the root a monorepo's projects are looked for
# exit codes of a run that ran no test at all: POSIX shells' for a command not found / not executable, and
# pytest's for a session that collected nothing
COMMAND_NOT_FOUND, COMMAND_NOT_EXECUTABLE, PYTEST_NO_TESTS = 127, 126, 5
SKIPPED_FOLDERS = frozenset({"node_modules", "venv", "site-packages", "__pycache__", "build", "dist"})

# test_x.py, x_test.py, conftest.py, x.test.js, x_spec.rb, or anything under a tests/ (test/, spec/) folder
_TEST_NAME = re.compile(r"^(test_.*|.*_test\.\w+|conftest\.py|.*\.(test|spec)\.\w+|.*_spec\.\w+)$")
_TEST_DIRS = {"test", "tests", "testing", "spec", "specs", "__tests__"}


def import_roots(ws: Workspace) -> list[str]:
    """The workspace's folders that imports of its own packages resolve from: its root, and for the root
    and each project folder below it (one with a pyproject.toml, setup.py or setup.cfg, up to
    PROJECT_DEPTH levels down: a monorepo's packages) the folder itself and its SOURCE_DIRS, where they
    hold a package (a folder with an __init__.py)."""
    roots = [ws.root]
    for project in [ws.root, *_projects_below(ws.root, PROJECT_DEPTH)]:
        roots += [folder for folder in (project, *(project / name for name in SOURCE_DIRS))
                  if folder not in roots and _holds_package(folder)]
    return [str(root) for root in roots]


def _projects_below(folder: Path, depth: int) -> list[Path]:
    """Project folders under `folder`, at most `depth` levels down, each before the ones inside it."""
    if depth == 0:
        return []
    try:
        children = sorted(c for c in folder.iterdir() if c.is_dir() and not c.is_symlink()
                          and not c.name.startswith(".") and c.name not in SKIPPED_FOLDERS)
    except OSError:
        return []
    found = []
    for child in children:
        if any((child / name).is_file() for name in PROJECT_FILES):
            found.append(child)
        found += _projects_below(child, depth - 1)
    return found


def _holds_package(folder: Path) -> bool:
    try:
        return folder.is_dir() and any((child / "__init__.py").is_file() for child in folder.iterdir())
    except OSError:
        return False


def _python_path(ws: Workspace, env: dict[str, str] | None) -> str:
    given = (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    return os.pathsep.join([*import_roots(ws), *filter(None, given.split(os.pathsep))])


def is_test_path(path: str) -> bool:
    """Whether a workspace-relative path is a test file by the usual naming conventions."""
    parts = re.split(r"[\\/]", path)
    return bool(_TEST_NAME.match(parts[-1])) or any(part in _TEST_DIRS for part in parts[:-1])


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class despite the name

    exit_code: int | None  # None only if the process could not be started
    passed: int = 0
    failed: int = 0
    errors: int = 0
    failing_tests: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    output: str = ""
    timed_out: bool = False
    output_truncated: bool = False
    command: str = ""
    output_limit_exceeded: bool = False  # killed for printing more than max_output_bytes
    sandbox: str = "none"  # where it ran: tools.sandbox's name for it

    @property
    def ok(self) -> bool:
        return (self.exit_code == 0 and not self.timed_out and not self.output_limit_exceeded
                and self.failed == 0 and self.errors == 0)

    @property
    def not_run(self) -> str:
        """Why the command ran no test at all (not found, not executable, could not start, collected none),
        with its last line of output; "" when it ran tests, passing or not. No edit can make such a run
        pass, so an agent stops at it instead of asking a model for one."""
        if self.exit_code is None:
            return self.output
        if self.passed or self.failed or self.errors or self.timed_out or self.output_limit_exceeded:
            return ""
        why = {COMMAND_NOT_FOUND: "the test command was not found",
               COMMAND_NOT_EXECUTABLE: "the test command is not executable"}.get(self.exit_code)
        if why is None and self.exit_code == PYTEST_NO_TESTS and "no tests ran" in self.output:
            why = "no tests were collected"
        if why is None:
            return ""
        last = next((line.strip() for line in reversed(self.output.splitlines()) if line.strip()), "")
        return f"{why} (exit code {self.exit_code}{': ' + last[:200] if last else ''})"

    def summary(self) -> str:
        """A few lines for the model's next prompt."""
        if self.timed_out:
            head = f"TIMED OUT after {self.duration_s:.1f}s (the test process group was killed)"
        elif self.output_limit_exceeded:
            head = "STOPPED: the tests printed more output than the limit (the test process group was killed)"
        else:
            counts = f"{self.passed} passed, {self.failed} failed, {self.errors} errors"
            head = f"exit code {self.exit_code}{_signal_note(self.exit_code)}: {counts}"
        lines = [head]
        if self.failing_tests:
            lines.append("failing: " + ", ".join(self.failing_tests[:20]))
        return "\n".join(lines)


def _signal_note(exit_code: int | None) -> str:
    """' (SIGXCPU)' for a process killed by a signal: a negative code, or 128+N as shells and bwrap say it."""
    if exit_code is None or 0 <= exit_code <= 128:
        return ""
    try:
        return f" ({signal.Signals(-exit_code if exit_code < 0 else exit_code - 128).name})"
    except ValueError:
        return ""


class _CappedReader(threading.Thread):
    """Drains a pipe; keeps the first HEAD_BYTES and the last TAIL_BYTES; calls `on_limit` once when more
    than `limit` bytes came (and keeps draining until the writers are gone)."""

    def __init__(self, stream, head_bytes: int, tail_bytes: int, limit: int | None = None, on_limit=None):
        super().__init__(daemon=True)
        self.stream = stream
        self.head_bytes, self.tail_bytes = head_bytes, tail_bytes
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.limit, self.on_limit = limit, on_limit
        self.limit_exceeded = False

    def run(self) -> None:
        read = self.stream.read1 if hasattr(self.stream, "read1") else self.stream.read
        while True:
            try:
                chunk = read(65536)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            self.total += len(chunk)
            if self.limit is not None and self.total > self.limit and not self.limit_exceeded:
                self.limit_exceeded = True
                self.on_limit()
            room = self.head_bytes - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > 2 * self.tail_bytes:  # trim in batches, not on every chunk
                    del self.tail[: len(self.tail) - self.tail_bytes]

    def text(self) -> tuple[str, bool]:
        """(head + a note on what was cut + tail, whether anything was cut); a note on the limit last."""
        tail = bytes(self.tail[-self.tail_bytes :])
        cut = self.total - len(self.head) - len(tail)
        head_s = self.head.decode("utf-8", errors="replace")
        tail_s = tail.decode("utf-8", errors="replace")
        stopped = (f"\n[stopped: the output passed the limit of {self.limit} bytes, so the test process "
                   "group was killed]\n") if self.limit_exceeded else ""
        if cut <= 0:
            return head_s + tail_s + stopped, False
        shown = f"showing the first {len(self.head)} and last {len(tail)}"
        note = f"\n[... {cut} bytes of output cut; {shown} ...]\n"
        return head_s + note + tail_s + stopped, True


def _group_alive(pgid: int) -> bool:
    """Whether any live (non-zombie) process is still in process group `pgid`."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


def _signal_group(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when nobody is left in it."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _kill_group(pgid: int, proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM the group, wait up to `grace` for the leader, then SIGKILL whatever is left of the group and
    wait (bounded) until the kernel has actually taken every member down."""
    _signal_group(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    if not _signal_group(pgid, signal.SIGKILL):
        return
    deadline = time.monotonic() + KILL_GRACE_S
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def run_tests(
    ws: Workspace,
    command: str | list[str] = DEFAULT_COMMAND,
    timeout: float = 300.0,
    head_bytes: int = HEAD_BYTES,
    tail_bytes: int = TAIL_BYTES,
    env: dict[str, str] | None = None,
    sandbox: Sandbox | str = "auto",
    max_output_bytes: int | None = MAX_OUTPUT_BYTES,
) -> TestResult:
    """Run `command` in the workspace root (a string goes through /bin/sh, a list is exec'd directly) inside
    `sandbox` (a Sandbox or its name: auto, bwrap, none). `python` on PATH is this interpreter's environment,
    so `python -m pytest` finds pytest; `env` is added to what the sandbox lets through, and PYTHONPATH
    starts with the workspace's import roots (module docstring)."""
    box = choose(sandbox) if isinstance(sandbox, str) else sandbox
    extra = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
             "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE", "1"), **(env or {}),
             "PYTHONPATH": _python_path(ws, env)}
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    shown = command if isinstance(command, str) else " ".join(command)
    start = time.monotonic()
    try:
        proc = box.spawn(argv, ws.root, box.environment(os.environ, extra), stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        return TestResult(None, output=f"could not start {shown!r}: {exc}", command=shown, sandbox=box.name)
    pgid = proc.pid  # start_new_session: the child leads its own session and group
    reader = _CappedReader(proc.stdout, head_bytes, tail_bytes, max_output_bytes,
                           on_limit=lambda: _signal_group(pgid, signal.SIGKILL))
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Also after a normal exit: children left running in the group must not outlive the run.
        _kill_group(pgid, proc, KILL_GRACE_S if timed_out else 0.0)
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        reader.join(timeout=KILL_GRACE_S)
        proc.stdout.close()
        box.finish(ws.root)
    duration = time.monotonic() - start
    output, truncated = reader.text()
    output = without_ansi(output)  # for the parsers and the model alike (`--color=yes` in a pytest config)
    passed, failed, errors, ids = parse_test_output(output)
    return TestResult(
        exit_code=proc.returncode, passed=passed, failed=failed, errors=errors, failing_tests=ids,
        duration_s=duration, output=output, timed_out=timed_out, output_truncated=truncated, command=shown,
        output_limit_exceeded=reader.limit_exceeded, sandbox=box.name,
    )
