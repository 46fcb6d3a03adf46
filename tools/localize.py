"""Where a bug may be when no traceback says: the code the failing tests run and the passing ones do not.

A test that fails on a wrong value (`assert f(x) == 3`) has a traceback that stops in the test itself, and
the function at fault may have a name neither the task nor the test mentions (a template filter `truncate`
is `do_truncate`). Spectrum-based fault localization finds it from coverage: run the failing tests' files
under coverage, one context per test (coverage_probe.py, in the test sandbox, with the project's Python),
and score each line by Ochiai, failing(line) / sqrt(all failing * (failing(line) + passing(line))): 1.0 for
a line every failing test runs and no passing test does. A function scores its best line, and the
suspects are the TOP_FUNCTIONS best functions, those whose names share a word with the bug's description
(the task, the failing tests' names) first among equals. Not only the top: with one failing test every
line only it runs scores 1.0 (a `__len__` its assert calls), while the faulty function, run by passing
tests too, scores lower; over the bundled suite's 36 bugs the first suspect held the fault for 12 and
the best three for 26 (scripts/context_recall.py). So the model is shown a ranked lead, not a verdict.
When more than MAX_SUSPECTS functions tie at the top, only the named ones are kept, and nothing when that
does not narrow them down.

Only for pytest commands (`python -m pytest ...`, `pytest ...`) whose Python can import coverage; anything
else (no passing test to contrast with, a timeout, another runner) localizes nothing and says why.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import shlex
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from deltaserve.tools.tests import is_test_path, run_tests
from deltaserve.tools.workspace import Workspace

PROBE = Path(__file__).with_name("coverage_probe.py")
MAX_SUSPECTS = 6  # more functions tied at the top score point nowhere in particular
TOP_FUNCTIONS = 3
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
MIN_WORD = 3  # shorter words (do, as, is) say nothing about which function is meant
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_SHELL_OPERATORS = {"&&", "||", ";", "|", "&"}


@dataclass(frozen=True)
class Suspect:
    path: str
    name: str | None  # the innermost function or class around the lines; None: module level
    lines: tuple[int, ...]  # its lines with its best score
    score: float

    def site(self) -> str:
        span = f"{self.lines[0]}" if len(self.lines) == 1 else f"{self.lines[0]}-{self.lines[-1]}"
        return f"{self.path}:{span}" + (f" (in {self.name})" if self.name else "")


@dataclass
class Localization:
    suspects: list[Suspect] = field(default_factory=list)
    failed: int = 0  # tests of the probe run that failed / passed
    passed: int = 0
    duration_s: float = 0.0
    note: str = ""  # why there are no suspects, when there are none

    def describe(self) -> str:
        """The suspects for a model (or why there are none)."""
        if not self.suspects:
            return f"No suspects from coverage: {self.note}."
        sites = "\n".join(f"- {s.site()}" for s in self.suspects)
        return ("Code the failing tests run, most suspicious first (measured with coverage: lines the "
                "failing tests run and the passing ones do not rank highest). A lead, not proof: the fault "
                f"is often in one of these, but can be in code they call.\n{sites}")

    def focus_lines(self) -> dict[str, set[int]]:
        found: dict[str, set[int]] = {}
        for s in self.suspects:
            found.setdefault(s.path, set()).update(s.lines)
        return found


def pytest_python(command: str) -> str | None:
    """The interpreter a pytest command runs under (`python -m pytest ...`: that python; `pytest ...`: its
    script's shebang), or None for any other command."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or _SHELL_OPERATORS & set(words):
        return None
    if _PYTHON.match(os.path.basename(words[0])) and words[1:3] == ["-m", "pytest"]:
        return words[0]
    if os.path.basename(words[0]) in ("pytest", "py.test"):
        path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
        script = shutil.which(words[0], path=path)
        try:
            first = Path(script).read_bytes()[:256].split(b"\n")[0].decode() if script else ""
        except OSError:
            return None
        interpreter = first[2:].strip().split(" ")[0] if first.startswith("#!") else ""
        return interpreter if _PYTHON.match(os.path.basename(interpreter)) else None
    return None


def words(text: str) -> set[str]:
    """The lowercased words of a text and of the identifiers in it (`do_truncate`, `TokenStream`)."""
    return {w.lower() for w in _WORD.findall(text) if len(w) >= MIN_WORD}


def localize(ws: Workspace, failing_tests: list[str], test_cmd: str, timeout: float, sandbox="auto",
             description: str = "") -> Localization:
    """Run the files of `failing_tests` (pytest node ids) under coverage and rank the code they run;
    `description` (the task) breaks ties among the top-scoring functions."""
    python = pytest_python(test_cmd)
    if python is None:
        return Localization(note="not a pytest command")
    files = list(dict.fromkeys(t.split("::")[0] for t in failing_tests))
    files = [f for f in files if ws.exists(f)]
    if not files:
        return Localization(note="no failing test file")
    probe = _run_probe(ws, python, files, failing_tests, timeout, sandbox, [])
    if probe == {}:  # no test ran: a project's addopts may need a plugin or option the probe lacks
        probe = _run_probe(ws, python, files, failing_tests, timeout, sandbox, ["-o", "addopts="])
    if isinstance(probe, str):
        return Localization(note=probe)
    result = Localization(failed=len(probe["failed"]), passed=len(probe["passed"]), duration_s=probe["s"])
    if not probe["failed"] or not probe["passed"]:
        result.note = "no failing test" if not probe["failed"] else "no passing test to contrast with"
        return result
    if not any(not is_test_path(p) and not p.startswith("..") for p in probe["lines"]):
        result.note = "coverage saw no code outside the tests"
        return result
    named = words(description + " " + " ".join(t.partition("::")[2] for t in probe["failed"]))
    result.suspects = rank(ws, probe["lines"], len(probe["failed"]), named)
    if not result.suspects:
        result.note = f"more than {MAX_SUSPECTS} functions tie for the top score"
    return result


def _run_probe(ws: Workspace, python: str, files: list[str], failing: list[str], timeout: float, sandbox,
               extra: list[str]) -> dict | str:
    """The probe's JSON (with its duration as "s"), {} when it ran no test, or why it did not run."""
    out = f".deltaserve-probe-{uuid.uuid4().hex[:12]}.json"
    # in-process only: xdist's workers and pytest-cov's own Coverage would leave the probe's empty. Plain
    # asserts: explaining a failed `assert a == b` calls a's __repr__, __eq__, splitlines, ..., code only
    # a failing test runs that is never the bug
    # its source, not its path: this package may live where the sandbox hides (a checkout under /tmp)
    argv = [python, "-c", PROBE.read_text(encoding="utf-8"), out, "--last", *failing, "--", "-q",
            "--assert=plain", "--tb=no",
            "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:pytest_cov", *extra, *files]
    try:
        run = run_tests(ws, argv, timeout=timeout, sandbox=sandbox)
        if run.timed_out:
            return f"the coverage run timed out after {run.duration_s:.0f}s"
        try:
            probe = json.loads((ws.root / out).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            missing = "No module named 'coverage'" in run.output
            return f"coverage is not installed for {python}" if missing else "the coverage run failed"
    finally:
        (ws.root / out).unlink(missing_ok=True)
    if not probe["failed"] and not probe["passed"]:
        return {}
    return {**probe, "s": run.duration_s}


def rank(ws: Workspace, lines: dict[str, dict[str, list[int]]], n_failed: int,
         named: set[str] = frozenset()) -> list[Suspect]:
    """The TOP_FUNCTIONS functions of non-test workspace files with the best-scoring lines, those whose name
    shares a word with `named` first among equals; when more than MAX_SUSPECTS tie at the top, only those
    (and [] if still too many)."""
    scored: dict[tuple[str, str | None], dict[int, float]] = {}
    for path, counts in lines.items():
        if path.startswith("..") or is_test_path(path) or not ws.exists(path):
            continue
        owners = _owners(ws.read_text(path)) if path.endswith(".py") else {}
        for line, (failed, passed) in counts.items():
            if failed:
                score = failed / math.sqrt(n_failed * (failed + passed))
                scored.setdefault((path, owners.get(int(line))), {})[int(line)] = score

    def is_named(s: Suspect) -> bool:
        return bool(s.name and words(s.name) & named)

    suspects = []
    for (path, name), by_line in scored.items():
        best = max(by_line.values())
        suspects.append(Suspect(path, name, tuple(sorted(n for n, s in by_line.items() if s == best)), best))
    suspects.sort(key=lambda s: (-s.score, not is_named(s), s.path, s.lines[0]))
    tied = [s for s in suspects if s.score == suspects[0].score] if suspects else []
    if len(tied) > MAX_SUSPECTS:
        named_tied = [s for s in tied if is_named(s)]
        return named_tied if len(named_tied) <= MAX_SUSPECTS else []
    return suspects[:TOP_FUNCTIONS]


def _owners(source: str) -> dict[int, str]:
    """line -> qualified name of the innermost function or class around it."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    owners: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, (child.end_lineno or child.lineno) + 1):
                    owners[line] = name  # inner definitions are visited later and overwrite
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return owners
