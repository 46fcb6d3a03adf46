"""The bwrap sandbox, for real: a repo whose tests each try one escape (write the real home, write outside
through a symlink they plant, reach a server on the host's 127.0.0.1, read an API key, fork 10,000
processes, allocate 64 GB, print 1 GB). Every attempt fails inside the sandbox, the run says so, and the
host, the workspace and the process table are as before. A normal suite still passes in it. Then what
issue 42 found still in reach: a workspace's virtual environment (a .pth file runs at the next host start),
the caller's session keyring, credential files under HOME and root-only files (CAP_DAC_OVERRIDE), an
uncapped /dev/shm, a tree too deep to hand back recursively, a planted .git the host's git would obey."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import pytest

from deltaserve.harness.workspace_guard import uncommitted_changes
from deltaserve.tools import sandbox
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

PROBLEM = sandbox.bwrap_problem()
needs_bwrap = pytest.mark.skipif(PROBLEM is not None,
                                 reason=f"{PROBLEM}; install it with `{sandbox.INSTALL_HINT}`")
ESCAPE_NAME = ".deltaserve-escape"
API_KEY = "sk-deltaserve-sandbox-test-not-a-real-key"

ATTACKS = textwrap.dedent('''
    import json, os, socket, subprocess, sys, time
    from pathlib import Path

    T = json.loads(Path(__file__).with_name("targets.json").read_text())

    def test_write_home():
        Path(os.path.expanduser("~"), ".deltaserve-escape").write_text("escaped\\n")  # the sandbox's HOME
        Path(T["real_home"], ".deltaserve-escape").write_text("escaped\\n")

    def test_write_through_symlink():
        errors = []
        targets = [T["outside_file"], os.path.join(T["real_home"], ".deltaserve-escape")]
        for n, target in enumerate(targets):
            os.symlink(target, f"planted_link{n}")
            try:
                Path(f"planted_link{n}").write_text("escaped\\n")
            except OSError as exc:
                errors.append(repr(exc))
        assert not errors, errors

    def test_connect_to_host():
        with socket.create_connection(("127.0.0.1", T["port"]), timeout=5) as conn:
            conn.sendall(b"escaped\\n")

    def test_read_api_key():
        assert os.environ["OPENAI_API_KEY"] == T["api_key"]

    BOMB = """
    import os, time
    n = 0
    try:
        for n in range(1, 10_001):
            if os.fork() == 0:
                os.closerange(0, 3)  # so the parent's pipes close when the parent exits
                time.sleep(60)
                os._exit(0)
    except OSError as exc:
        raise SystemExit(f"fork {n} failed: {exc!r}")
    print("forked 10000")
    """

    def test_fork_bomb():  # from a small process, whose forks are quick
        out = subprocess.run([sys.executable, "-c", BOMB], capture_output=True, text=True)
        assert "forked 10000" in out.stdout, out.stderr

    def test_allocate_64gb():
        block = bytearray(64 << 30)
        assert len(block) == 64 << 30

    def test_print_1gb():
        line = "x" * 1023 + "\\n"
        for _ in range(1 << 20):
            sys.stdout.write(line)
''')

# What each failed attempt looks like in the test output.
ATTACK_ERRORS = {
    "write_home": ["Read-only file system"],
    # the host's /tmp is not there (a private one is), the home directory is read-only
    "write_through_symlink": ["No such file or directory", "Read-only file system"],
    "connect_to_host": ["Connection refused"],  # the sandbox's own loopback: nobody listens on that port
    "read_api_key": ["KeyError: 'OPENAI_API_KEY'"],
    "fork_bomb": ["BlockingIOError"],
    "allocate_64gb": ["MemoryError"],
}


class HostServer:
    """A TCP server on the host's 127.0.0.1; counts the connections it accepted."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def attack_repo(tmp_path, monkeypatch):
    """The attack repo, an outside file its symlink aims at, a host server, an API key in our env."""
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    outside = tmp_path / "outside" / "victim.txt"
    outside.parent.mkdir()
    outside.write_text("original\n")
    server = HostServer()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_attacks.py").write_text(ATTACKS)
    targets = {"real_home": os.path.expanduser("~"), "outside_file": str(outside), "port": server.port,
               "api_key": API_KEY}
    (repo / "targets.json").write_text(json.dumps(targets))
    yield Workspace(repo), outside, server
    server.close()


def _attack(ws: Workspace, name: str, box: str):
    cmd = f"python -m pytest -q -s -p no:cacheprovider test_attacks.py::test_{name}"
    return run_tests(ws, cmd, timeout=120, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, sandbox=box)


def _digest(root: Path) -> dict[str, str]:
    files = [p for p in root.iterdir() if p.is_file() and not p.is_symlink()]
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def _owned_by_sandbox_uid(root: Path) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.lstat().st_uid == sandbox.OUTSIDE_ID]


@needs_bwrap
@pytest.mark.parametrize("name", [*ATTACK_ERRORS, "print_1gb"])
def test_every_escape_fails_inside_the_sandbox(attack_repo, running_in, name):
    ws, outside, server = attack_repo
    real_escape = Path(os.path.expanduser("~"), ESCAPE_NAME)
    assert not real_escape.exists()
    before = _digest(ws.root)

    res = _attack(ws, name, "bwrap")

    assert res.sandbox == "bwrap" and not res.ok and not res.timed_out
    if name == "print_1gb":  # stopped by the output limit, long before a gigabyte
        assert res.output_limit_exceeded and res.summary().startswith("STOPPED")
        assert res.output_truncated and len(res.output) < 30_000
    else:
        assert res.failing_tests == [f"test_attacks.py::test_{name}"], res.output[-3000:]
        for error in ATTACK_ERRORS[name]:
            assert error in res.output, res.output[-3000:]
    assert not real_escape.exists()
    assert outside.read_text() == "original\n"
    assert server.accepted == 0
    assert _digest(ws.root) == before  # the repo's own files are untouched
    assert running_in(ws.root) == []  # nothing it started is still running
    assert _owned_by_sandbox_uid(ws.root) == []  # what it created was given back to the workspace's owner


@pytest.mark.parametrize("name", ["write_through_symlink", "connect_to_host", "read_api_key"])
def test_the_same_attacks_succeed_without_a_sandbox(attack_repo, name):
    """The attack tests are real: without the sandbox these three (the harmless ones) get through."""
    ws, outside, server = attack_repo
    targets = json.loads((ws.root / "targets.json").read_text())
    fake_home = ws.root.parent / "home"  # never the real one, unsandboxed
    fake_home.mkdir()
    (ws.root / "targets.json").write_text(json.dumps({**targets, "real_home": str(fake_home)}))
    res = _attack(ws, name, "none")
    assert res.ok and res.sandbox == "none", res.output[-3000:]
    if name == "write_through_symlink":
        assert outside.read_text() == (fake_home / ESCAPE_NAME).read_text() == "escaped\n"
    if name == "connect_to_host":
        deadline = time.monotonic() + 5
        while server.accepted == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.accepted == 1


NORMAL_SUITE = textwrap.dedent('''
    import multiprocessing, os, socket, subprocess, sys, threading

    def test_tmp_path_and_home(tmp_path):
        (tmp_path / "f.txt").write_text("hi")
        assert (tmp_path / "f.txt").read_text() == "hi"
        home = os.path.expanduser("~/cache")
        os.makedirs(home, exist_ok=True)

    def test_writes_in_the_workspace():
        assert os.access("test_normal.py", os.W_OK)
        with open("out.txt", "w") as fh:
            fh.write("written by a test\\n")

    def test_git_in_the_workspace():
        out = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert subprocess.run(["rm", "-rf", ".git"]).returncode != 0  # its history is read-only

    def test_subprocess():
        out = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
        assert out.stdout.strip() == "42"

    def _square(x):
        return x * x

    def test_multiprocessing_pool():
        with multiprocessing.get_context("fork").Pool(2) as pool:
            assert pool.map(_square, range(5)) == [0, 1, 4, 9, 16]

    def test_a_server_of_its_own_on_loopback():
        srv = socket.create_server(("127.0.0.1", 0))
        port = srv.getsockname()[1]
        threading.Thread(target=lambda: srv.accept()[0].sendall(b"pong"), daemon=True).start()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            assert conn.recv(4) == b"pong"
        srv.close()
''')


@needs_bwrap
def test_a_normal_suite_passes_inside_the_sandbox(tmp_path):
    (tmp_path / "test_normal.py").write_text(NORMAL_SUITE)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    ws = Workspace(tmp_path)
    res = run_tests(ws, "python -m pytest -q -p no:cacheprovider", timeout=120,
                    env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}, sandbox="bwrap")
    assert res.ok and res.passed == 6 and res.sandbox == "bwrap", res.output[-3000:]
    out = tmp_path / "out.txt"
    assert out.read_text() == "written by a test\n"
    assert (tmp_path / ".git" / "HEAD").is_file()
    assert (out.stat().st_uid, out.stat().st_gid) == (tmp_path.stat().st_uid, tmp_path.stat().st_gid)


@needs_bwrap
def test_a_daemon_started_by_a_test_dies_with_the_run(tmp_path, running_in):
    """A detached grandchild (new session, out of the process group) that would plant a symlink to
    outside after the run: the sandbox's PID namespace ends with the run, so it never does."""
    script = ("import os, time\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    time.sleep(1.0)\n"
              "    os.symlink('/etc', 'late_link')\n"
              "    os._exit(0)\n")
    (tmp_path / "daemon.py").write_text(script)
    res = run_tests(Workspace(tmp_path), "python daemon.py; echo started", timeout=60, sandbox="bwrap")
    assert res.exit_code == 0 and "started" in res.output
    time.sleep(1.5)
    assert not os.path.lexists(tmp_path / "late_link")
    assert running_in(tmp_path) == []


@needs_bwrap
def test_hang_in_the_sandbox_is_killed(tmp_path, running_in):
    res = run_tests(Workspace(tmp_path), "echo started; sleep 300", timeout=1.0, sandbox="bwrap")
    assert res.timed_out and not res.ok and "started" in res.output
    assert running_in(tmp_path) == []


@needs_bwrap
@pytest.mark.parametrize("limits,code,said", [
    (sandbox.Limits(cpu_seconds=1), "while True: pass", "(SIGXCPU)"),
    (sandbox.Limits(file_bytes=1 << 20), "open('big', 'wb').write(bytes(2 << 20))", "File too large"),
    (sandbox.Limits(open_files=64), "[open('/dev/null') for _ in range(100)]", "Too many open files"),
])
def test_each_limit_binds_inside_the_sandbox(tmp_path, limits, code, said):
    res = run_tests(Workspace(tmp_path), ["python", "-c", code], timeout=60,
                    sandbox=sandbox.BwrapSandbox(limits))
    assert not res.ok and not res.timed_out and res.exit_code != 0
    assert said in res.summary() + res.output, res.summary() + res.output
    assert not (tmp_path / "big").exists() or (tmp_path / "big").stat().st_size <= 1 << 20


def test_unknown_and_unavailable_sandboxes_are_clear_errors(monkeypatch):
    with pytest.raises(sandbox.SandboxError, match="unknown sandbox 'docker'"):
        sandbox.choose("docker")
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(sandbox.SandboxError, match="apt-get install bubblewrap"):
        sandbox.choose("bwrap")


def test_auto_without_bwrap_warns_once_and_runs_unsandboxed(monkeypatch, caplog, tmp_path):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    sandbox._warn_once.cache_clear()
    with caplog.at_level("WARNING", logger=sandbox.log.name):
        first = sandbox.choose("auto")
        sandbox.choose("auto")
    assert first.name == "none"
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "apt-get install bubblewrap" in warnings[0] and "\n" not in warnings[0]
    res = run_tests(Workspace(tmp_path), "echo ran", timeout=30, sandbox=first)
    assert res.ok and res.sandbox == "none"
    sandbox._warn_once.cache_clear()


def test_environment_is_an_allow_list(tmp_path):
    inherited = {"PATH": "/bin", "OPENAI_API_KEY": "sk-x", "AWS_SECRET_ACCESS_KEY": "y", "LC_ALL": "C",
                 "HOME": str(tmp_path), "GITHUB_TOKEN": "z"}
    env = sandbox.BwrapSandbox().environment(inherited, {"EXTRA": "1"})
    assert env == {"PATH": "/bin", "LC_ALL": "C", "HOME": sandbox.SANDBOX_HOME, "TMPDIR": "/tmp",
                   "USER": "sandbox", "LOGNAME": "sandbox", "EXTRA": "1"}
    assert sandbox.NoSandbox().environment(inherited, {"EXTRA": "1"}) == {**inherited, "EXTRA": "1"}


def test_toolchains_installed_under_home_are_still_found(tmp_path):
    (tmp_path / ".rustup").mkdir()
    (tmp_path / ".cargo").mkdir()
    inherited = {"HOME": str(tmp_path), "PATH": "/bin", "JAVA_HOME": "/opt/jdk", "CARGO_HOME": "/opt/cargo"}
    env = sandbox.BwrapSandbox().environment(inherited, {})
    assert env["RUSTUP_HOME"] == str(tmp_path / ".rustup") and "PYENV_ROOT" not in env  # only what exists
    assert env["CARGO_HOME"] == "/opt/cargo" and env["JAVA_HOME"] == "/opt/jdk"  # the caller's own win
    assert env["HOME"] == sandbox.SANDBOX_HOME


@needs_bwrap
@pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
def test_cargo_installed_by_rustup_runs_in_the_sandbox(workspace):
    ws = workspace({"Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
                    "src/lib.rs": "#[test]\nfn adds() { assert_eq!(1 + 2, 3); }\n"})
    res = run_tests(ws, "cargo test --offline", timeout=120, sandbox="bwrap")
    assert res.ok and res.passed == 1, res.output


NOBODY = 65534
AS_NOBODY = """
import site, sys
site.addsitedir(sys.argv[1])  # our editable install, for an interpreter outside our venv
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace
res = run_tests(Workspace(sys.argv[2]), "python3 bomb.py; id -u; touch made", sandbox="bwrap")
print(res.sandbox, res.exit_code)
print(res.output)
"""


def _interpreter_for(uid: int) -> str | None:
    """A Python of our version that `uid` can run (ours lives under root's home on some machines)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        probe = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", exe, "-c",
                                "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == str(sys.version_info[:2]):
            return exe
    return None


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="as a non-root user the other sandbox tests already cover this")
def test_as_an_unprivileged_user_the_fork_bomb_is_bounded_too(running_in):
    """The other path: a non-root caller's own uid in the sandbox (no uid mapping), limits that bind it."""
    python = _interpreter_for(NOBODY)
    if python is None:
        pytest.skip("no Python of this version that uid 65534 can run")
    site = sysconfig.get_paths()["purelib"]
    ws = Path(tempfile.mkdtemp(prefix="sandbox-nobody-"))  # under /tmp itself: nobody must reach it
    try:
        os.chown(ws, NOBODY, NOBODY)
        bomb = ATTACKS.split('BOMB = """')[1].split('"""')[0]
        (ws / "bomb.py").write_text(textwrap.dedent(bomb))
        out = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                              python, "-c", AS_NOBODY, site, str(ws)],
                             capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("bwrap 0\n") and "BlockingIOError" in out.stdout, out.stdout
        assert f"\n{NOBODY}\n" in out.stdout  # its own uid inside, nothing mapped
        assert (ws / "made").stat().st_uid == NOBODY
        assert running_in(ws) == []
    finally:
        shutil.rmtree(ws, ignore_errors=True)


# ---- issue 42: what a test could still reach or change (each test fails on the sandbox before the fix)

def _inside(root: Path, code: str, box: sandbox.Sandbox | str = "bwrap"):
    """Run Python `code` in `root` in the sandbox; its result."""
    return run_tests(Workspace(root), ["python", "-c", textwrap.dedent(code)], timeout=60, sandbox=box)


def _venv(folder: Path) -> Path:
    """A virtual environment's layout in `folder`; its site-packages."""
    site_packages = folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    site_packages.mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    return site_packages


@needs_bwrap
def test_virtual_environments_in_the_workspace_are_read_only_inside(tmp_path):
    """A .pth file dropped in a workspace's .venv would run at the next host start of that Python."""
    targets = [_venv(tmp_path / ".venv"), _venv(tmp_path / "services" / "api" / "venv")]
    res = _inside(tmp_path, f"""
        import os
        for site_packages in {[str(t) for t in targets]!r}:
            try:
                with open(os.path.join(site_packages, "evil.pth"), "w") as fh:
                    fh.write("import os; os.system('touch /escaped')\\n")
                print("wrote", site_packages)
            except OSError as exc:
                print("refused:", exc.strerror)
        print(open(".venv/pyvenv.cfg").read())  # still there to run
    """)
    assert res.output.count("refused: Read-only file system") == 2, res.output
    assert "home = " in res.output
    assert not any((t / "evil.pth").exists() for t in targets)


ADD_KEY_SYSCALL = {"x86_64": 248, "aarch64": 217, "riscv64": 217, "i686": 286, "i386": 286}
KEYCTL_SYSCALL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "i686": 288, "i386": 288}
KEY_SPEC_SESSION_KEYRING = -3
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_SEARCH, KEYCTL_READ = 1, 10, 11
SESSION_KEY = b"deltaserve-sandbox-test-session-secret"


def _in_a_thread_with_a_fresh_keyring(work):
    """work() in a thread that first joins a new session keyring: credentials, keyrings with them, are per
    thread in Linux, so the test process's own keyring is never touched."""
    done = {}

    def run():
        libc = ctypes.CDLL(None, use_errno=True)
        keyctl = KEYCTL_SYSCALL[platform.machine()]
        if libc.syscall(keyctl, KEYCTL_JOIN_SESSION_KEYRING, None) < 0:
            done["skip"] = f"no keyrings here: {os.strerror(ctypes.get_errno())}"
            return
        key = libc.syscall(ADD_KEY_SYSCALL[platform.machine()], b"user", b"deltaserve-sandbox-test",
                           SESSION_KEY, len(SESSION_KEY), KEY_SPEC_SESSION_KEYRING)
        done["result"] = work(key, keyctl)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "skip" in done:
        pytest.skip(done["skip"])
    return done["result"]


@needs_bwrap
@pytest.mark.skipif(platform.machine() not in ADD_KEY_SYSCALL, reason="keyctl's number is not known here")
def test_the_callers_session_keyring_is_not_the_sandboxes(tmp_path):
    """A key the caller holds in its session keyring: readable by the caller, by id and by search, and by
    neither way inside the sandbox."""
    code = """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)
        n = libc.syscall({keyctl}, {read}, {key}, buf, 256)
        print("read:", n, buf.raw[:max(n, 0)], os.strerror(ctypes.get_errno()))
        found = libc.syscall({keyctl}, {search}, {session}, b"user", b"deltaserve-sandbox-test", 0)
        print("search:", found, os.strerror(ctypes.get_errno()))
    """

    def attack(key, keyctl):
        fill = dict(keyctl=keyctl, read=KEYCTL_READ, search=KEYCTL_SEARCH, key=key,
                    session=KEY_SPEC_SESSION_KEYRING)
        return _inside(tmp_path, code.format(**fill), "none"), _inside(tmp_path, code.format(**fill))

    outside, inside = _in_a_thread_with_a_fresh_keyring(attack)
    assert SESSION_KEY.decode() in outside.output and "search: -1" not in outside.output  # the attack is real
    assert inside.exit_code == 0, inside.output
    assert "read: -1" in inside.output and "search: -1" in inside.output, inside.output
    assert SESSION_KEY.decode() not in inside.output


@pytest.fixture
def home_with_credentials(monkeypatch):
    """A HOME holding credential files beside a toolchain, in a folder the sandbox's root filesystem shows
    (inside the real home directory, not under /tmp, which is private inside anyway)."""
    parent = os.path.expanduser("~")
    if any(parent.startswith(p) for p in ("/tmp", "/var/tmp", "/run")) or not os.access(parent, os.W_OK):
        pytest.skip(f"no folder outside the sandbox's private ones to put a HOME in ({parent})")
    home = Path(tempfile.mkdtemp(prefix=".deltaserve-sandbox-home-", dir=parent))
    secrets = {".cache/huggingface/token": "hf_deltaserve_test", ".config/openai/key": "sk-deltaserve-test",
               ".cargo/credentials.toml": '[registry]\ntoken = "cargo-deltaserve-test"\n'}
    for rel, text in {**secrets, ".cargo/env": "toolchain-ok\n"}.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CARGO_HOME", raising=False)
    yield home, secrets
    shutil.rmtree(home)


@needs_bwrap
def test_credentials_under_home_and_root_only_files_are_out_of_reach(tmp_path, home_with_credentials):
    home, secrets = home_with_credentials
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    root_only = tmp_path / ".git" / "root-only-secret"  # read-only inside, and never lent to the sandbox
    root_only.write_text("root-only-deltaserve-test\n")
    root_only.chmod(0o600)
    paths = [str(home / rel) for rel in secrets] + [str(root_only)]
    res = _inside(tmp_path, f"""
        import os
        for path in {paths!r} + [os.path.join(os.environ["CARGO_HOME"], "credentials.toml")]:
            try:
                print("read", path, repr(open(path).read()))
            except OSError as exc:
                print("refused", path, exc.strerror)
        print(open(os.path.join(os.environ["CARGO_HOME"], "env")).read())  # the toolchain itself is there
        print([line for line in open("/proc/self/status") if line.startswith("Cap")])
    """)
    assert res.exit_code == 0, res.output
    for secret in [*secrets.values(), "root-only-deltaserve-test", "cargo-deltaserve-test"]:
        assert secret not in res.output, res.output
    assert res.output.count("refused") == len(paths) + 1 and "toolchain-ok" in res.output
    if os.geteuid() == 0:  # no capability left (CAP_DAC_OVERRIDE read root-only files)
        assert res.output.count("0000000000000000") == 5, res.output


@needs_bwrap
def test_dev_shm_is_capped_and_dev_is_read_only(tmp_path):
    box = sandbox.BwrapSandbox(sandbox.Limits(tmp_bytes=1 << 20))
    res = _inside(tmp_path, """
        import os
        for path, size in (("/dev/shm/big", 2 << 20), ("/dev/big", 1)):
            try:
                with open(path, "wb") as fh:
                    fh.write(bytes(size))
                print("wrote", path)
            except OSError as exc:
                print("refused", path, exc.strerror)
        os.remove("/dev/shm/big")  # what fitted
        import multiprocessing
        multiprocessing.Lock()  # semaphores still work: /dev/shm is there
    """, box)
    assert res.exit_code == 0, res.output
    assert "refused /dev/shm/big No space left on device" in res.output
    assert "refused /dev/big Read-only file system" in res.output


DEPTH = 1_500  # deeper than Python's recursion limit


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="files are handed back only when root runs the sandbox")
def test_a_tree_deeper_than_the_recursion_limit_is_handed_back():
    # not in tmp_path: pytest's clean-up of old runs (shutil.rmtree) would recurse too deep in it
    ws = Path(tempfile.mkdtemp(prefix="deltaserve-deep-tree-"))
    try:
        res = _inside(ws, f"""
            import os
            for n in range(1, {DEPTH} + 1):  # os.makedirs would recurse too deep
                os.mkdir("d/" * n)
            open("d/" * {DEPTH} + "f", "w").close()
        """)
        assert res.exit_code == 0, res.output
        owner = ws.stat().st_uid, ws.stat().st_gid
        level = ws
        for _ in range(DEPTH):
            level = level / "d"
            assert (level.stat().st_uid, level.stat().st_gid) == owner
        assert ((level / "f").stat().st_uid, (level / "f").stat().st_gid) == owner
    finally:
        subprocess.run(["rm", "-rf", str(ws)], check=True)  # coreutils' rm does not recurse


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the workspace is lent to the sandbox only when root runs it")
def test_a_lent_workspace_comes_back_to_its_owner(tmp_path):
    """A workspace owned by someone else than root: the sandbox may edit and add to it, and afterwards
    every file is that user's again, its .git and virtual environment never having left them."""
    owner = 4242
    ws = tmp_path / "ws"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "mod.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    _venv(ws / ".venv")
    subprocess.run(["chown", "-R", f"{owner}:{owner}", str(ws)], check=True)
    res = _inside(ws, """
        import os
        open("pkg/mod.py", "a").write("y = 2\\n")
        os.makedirs("new/deeper")
        open("new/deeper/made.txt", "w").write("made\\n")
        print(os.stat(".git").st_uid == os.getuid(), os.stat(".venv").st_uid == os.getuid())
    """)
    assert res.exit_code == 0 and "False False" in res.output, res.output
    assert (ws / "pkg" / "mod.py").read_text() == "x = 1\ny = 2\n"
    everything = [ws, *ws.rglob("*")]
    assert {(p.lstat().st_uid, p.lstat().st_gid) for p in everything} == {(owner, owner)}


@needs_bwrap
def test_a_git_repository_planted_by_a_test_runs_nothing_on_the_host(tmp_path):
    """A workspace without a .git of its own: a test makes one (git is there inside) whose config names
    commands (core.fsmonitor, and a filter its .gitattributes picks); the next `deltaserve fix` there runs
    git status on the host for its clean-workspace check, which must run neither."""
    ws, markers = tmp_path / "ws", tmp_path / "markers"
    ws.mkdir()
    markers.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    res = run_tests(Workspace(ws), textwrap.dedent(f"""
        git init -q . && printf '*.py filter=planted\\n' > .gitattributes &&
        git add -A && git -c user.name=t -c user.email=t@t commit -qm planted &&
        git config core.fsmonitor 'touch {markers}/fsmonitor; false' &&
        git config filter.planted.clean 'touch {markers}/filter; cat' &&
        printf 'x = 2\\n' > a.py && echo planted
    """), timeout=60, sandbox="bwrap")
    assert res.exit_code == 0 and "planted" in res.output, res.output
    assert uncommitted_changes(ws) == [" M a.py"]
    assert list(markers.iterdir()) == []
