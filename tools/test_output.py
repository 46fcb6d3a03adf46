"""Counts and failing test ids read from a test run's output, for the runners whose output says them:
- pytest: the final summary and the FAILED/ERROR lines (node ids);
- unittest (`python -m unittest`, Django's runtests.py, nose2): "Ran N tests", "FAILED (failures=2,
  errors=1)" and the "FAIL: test_x (module.Class.test_x)" headers;
- cargo test: every binary's "test result: ... N passed; M failed" summed, the "test x ... FAILED" lines;
- go test: "--- FAIL: TestX" / "--- PASS: TestX" lines (passes are printed with -v only);
- jest / vitest: "Tests: 1 failed, 2 passed, 3 total" / "Tests  1 failed | 2 passed (3)";
- TAP (`node --test`, prove, tap): node's "# pass N" / "# fail N", else the top-level "ok" / "not ok" lines.
Anything else counts nothing; the caller goes by the exit code then. Terminal colour codes are taken out
first (`without_ansi`): a project whose pytest config says `--color=yes` colours its summary and FAILED
lines."""

from __future__ import annotations

import re

# colours and cursor moves (CSI: ESC [ ... final byte), titles and links (OSC: ESC ] ... BEL or ESC \),
# character sets (`tput sgr0` says ESC ( B) and the other two-byte escapes (ESC and one byte in @-_)
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\n]*(?:\x07|\x1b\\)?|[()][0-9A-Za-z]|[@-_])")

# pytest's counts ("3 failed, 10 passed"); pytest 9 adds "5 subtests passed" (a failed subtest is in "failed")
_PYTEST_COUNTS = r"(?:\d+ (?:subtests )?\w+(?:, )?)+"
_SUMMARY_LINE = re.compile(rf"^=*\s*(?P<body>{_PYTEST_COUNTS})(?: in [\d.]+s.*)?\s*=*\s*$")
_COUNT = re.compile(r"(\d+) (?:subtests )?"
                    r"(passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")
# "FAILED t.py::test_x - ...", "ERROR t.py::test_x", pytest 9's "SUBFAILED[msg] (i=1) t.py::test_x - ..."
# (the id is the first word with a "::" after the subtest's description); not unittest's verdict
# "FAILED (failures=1)"
_FAILED_ID = re.compile(r"^(?:(?:FAILED|ERROR) |SUBFAILED.*? (?=[^\s(]\S*::))([^\s(]\S*)")

_RAN = re.compile(r"^Ran (\d+) tests? in ", re.MULTILINE)
_VERDICT = re.compile(r"^(?:OK|FAILED)(?: \((?P<counts>[^)]*)\))?\s*$", re.MULTILINE)
_VERDICT_COUNT = re.compile(r"(failures|errors|skipped|expected failures|unexpected successes)=(\d+)")
# "FAIL: test_add (tests.test_calc.CalcTests.test_add)" (Python 3.11+) or "... (tests.test_calc.CalcTests)"
_UNITTEST_HEADER = re.compile(r"^(?:FAIL|ERROR|UNEXPECTED SUCCESS): (\w+) \(([\w.]+)\)", re.MULTILINE)

# `tests/t.py::test_x`, `tests/t.py::TestX::test_y`, `tests/t.py::test_x[param]`
_NODE_ID_NAMES = re.compile(r"::(\w+)(?:::(\w+))?")

Counts = tuple[int, int, int, list[str]]  # passed, failed, errors, failing test ids


def without_ansi(output: str) -> str:
    """`output` without terminal escape codes, which neither the parsers nor the model should read."""
    return _ANSI.sub("", output) if "\x1b" in output else output


def failing_test_names(output: str) -> list[str]:
    """The test functions (and their classes) the output names: pytest node ids, unittest's headers."""
    output = without_ansi(output)
    names = [n for m in _NODE_ID_NAMES.finditer(output) for n in m.groups() if n]
    for name, where in _UNITTEST_HEADER.findall(output):
        parts = where.split(".")
        names += [name, parts[-2] if parts[-1] == name and len(parts) > 1 else parts[-1]]
    return list(dict.fromkeys(names))


def parse_test_output(output: str) -> Counts:
    """The counts of the first runner whose summary the output holds (module docstring), else zeros."""
    output = without_ansi(output)
    for parse in (parse_pytest_output, parse_unittest_output, parse_cargo_output, parse_go_output,
                  parse_jest_output, parse_tap_output):
        counts = parse(output)
        if any(counts[:3]) or counts[3]:
            return counts
    return 0, 0, 0, []


def parse_pytest_output(output: str) -> Counts:
    """(passed, failed, errors, failing test ids) from pytest's final summary and its FAILED/ERROR lines;
    subtests count as tests (pytest counts a failed one in "failed" already, so "subtests passed" goes with
    "passed")."""
    counts = _pytest_summary(output)
    passed, failed = counts.get("passed", 0), counts.get("failed", 0)
    errors = counts.get("error", 0) + counts.get("errors", 0)
    ids = []
    for line in output.splitlines():
        m = _FAILED_ID.match(line)
        if m and m.group(1) not in ids:
            ids.append(m.group(1))
    return passed, failed, errors, ids


def _pytest_summary(output: str) -> dict[str, int]:
    """word -> count from pytest's last summary line, "subtests passed" added to "passed"."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if _SUMMARY_LINE.match(line) and _COUNT.search(line):
            counts: dict[str, int] = {}
            for n, word in _COUNT.findall(line):
                counts[word] = counts.get(word, 0) + int(n)
            return counts
    return {}


def parse_unittest_output(output: str) -> Counts:
    """(passed, failed, errors, failing test ids as module.Class.test) from unittest's last "Ran N tests"
    and the verdict after it; an unexpected success fails the run (Python 3.11+), so it counts as failed."""
    ran = _RAN.findall(output)
    verdicts = list(_VERDICT.finditer(output))
    if not ran or not verdicts:
        return 0, 0, 0, []
    counts = dict.fromkeys(("failures", "errors", "skipped", "expected failures", "unexpected successes"), 0)
    for word, n in _VERDICT_COUNT.findall(verdicts[-1].group("counts") or ""):
        counts[word] = int(n)
    failed = counts["failures"] + counts["unexpected successes"]
    passed = int(ran[-1]) - failed - counts["errors"] - counts["skipped"] - counts["expected failures"]
    ids = []
    for name, where in _UNITTEST_HEADER.findall(output):
        test_id = where if where.endswith("." + name) else f"{where}.{name}"
        if test_id not in ids:
            ids.append(test_id)
    return max(passed, 0), failed, counts["errors"], ids


_CARGO_RESULT = re.compile(r"^test result: \w+\. (\d+) passed; (\d+) failed;", re.MULTILINE)
_CARGO_FAILED = re.compile(r"^test (\S+) \.\.\. FAILED$", re.MULTILINE)


def parse_cargo_output(output: str) -> Counts:
    """cargo test: one "test result:" line per test binary (unit, integration, doc tests), summed."""
    results = [(int(p), int(f)) for p, f in _CARGO_RESULT.findall(output)]
    ids = list(dict.fromkeys(_CARGO_FAILED.findall(output)))
    return sum(p for p, _ in results), sum(f for _, f in results), 0, ids


_GO_RESULT = re.compile(r"^\s*--- (FAIL|PASS): (\S+)", re.MULTILINE)


def parse_go_output(output: str) -> Counts:
    """go test: top-level tests and subtests (TestX/case) alike, each name counted once."""
    outcome = {name: verdict for verdict, name in _GO_RESULT.findall(output)}  # a rerun's verdict last
    failed = [name for name, verdict in outcome.items() if verdict == "FAIL"]
    return len(outcome) - len(failed), len(failed), 0, failed


_JEST_TESTS = re.compile(r"^\s*Tests:?\s+(.*?(?:total|\(\d+\)))\s*$", re.MULTILINE)


def parse_jest_output(output: str) -> Counts:
    """jest's "Tests:" line or vitest's "Tests" line (the last one: watch mode prints several)."""
    found = _JEST_TESTS.findall(output)
    if not found:
        return 0, 0, 0, []
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed)", found[-1])}
    return counts.get("passed", 0), counts.get("failed", 0), 0, []


_TAP_RESULT = re.compile(r"^(not ok|ok) \d+(?: - ([^#\n]*?))?\s*(#\s*(?:SKIP|TODO)\b.*)?$",
                         re.MULTILINE | re.IGNORECASE)
_TAP_SUMMARY = re.compile(r"^# (pass|fail) (\d+)$", re.MULTILINE)


def parse_tap_output(output: str) -> Counts:
    """TAP: the top-level results (a subtest's are indented), skipped and to-do ones left out; node's own
    summary counts where it prints one."""
    results = [(verdict, name) for verdict, name, directive in _TAP_RESULT.findall(output) if not directive]
    failed = [name for verdict, name in results if verdict == "not ok"]
    summary = {word: int(n) for word, n in _TAP_SUMMARY.findall(output)}
    if summary:
        return summary.get("pass", 0), summary.get("fail", 0), 0, list(dict.fromkeys(failed))
    return len(results) - len(failed), len(failed), 0, list(dict.fromkeys(failed))


# how long a run took, as each runner's summary says it (so the same failure reads the same every run)
_DURATIONS = [
    (re.compile(rf"^(=*\s*{_PYTEST_COUNTS}) in [\d.]+s(?: \(\d+:\d\d:\d\d\))?(\s*=*)$", re.MULTILINE),
     r"\1\2"),  # pytest
    (re.compile(r"^(Ran \d+ tests?) in [\d.]+s$", re.MULTILINE), r"\1"),  # unittest
    (re.compile(r"(; \d+ filtered out); finished in [\d.]+s$", re.MULTILINE), r"\1"),  # cargo
    (re.compile(r"^(\s*--- (?:FAIL|PASS|SKIP): \S+) \([\d.]+s\)$", re.MULTILINE), r"\1"),  # go
    (re.compile(r"^((?:ok|FAIL)\s+\S+)\s+[\d.]+s$", re.MULTILINE), r"\1"),  # go's package lines
    (re.compile(r"^(\s*#?\s*duration_ms:?) [\d.]+$", re.MULTILINE), r"\1"),  # TAP (node --test)
    (re.compile(r"^(Time:)\s+[\d.]+ ?m?s.*$", re.MULTILINE), r"\1"),  # jest
]


def without_durations(output: str) -> str:
    """`output` with the run times its runner's summary lines state taken out: the model needs the failure,
    and a prompt that differs by "in 0.04s" from one run to the next is another prompt to a greedy model
    (and to the prefix cache)."""
    for pattern, kept in _DURATIONS:
        output = pattern.sub(kept, output)
    return output
