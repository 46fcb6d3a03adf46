"""Run pytest under coverage with one coverage context per test, then write which lines the failing tests
ran and how many failing and passing tests ran each (JSON). tools/localize.py runs it inside the test
sandbox with the project's own Python, so it imports nothing of deltaserve: only coverage and pytest.

    python coverage_probe.py OUT.json [--last NODEID ...] -- PYTEST_ARGS...

`--last` tests run after all others: the first test to touch a lazily built cache (a lexer's tables, a
compiled regex) runs the code that builds it, and that code must not look like the failing tests' own.
"""

from __future__ import annotations

import json
import os
import sys

import coverage
import pytest


class PerTestContexts:
    """A pytest plugin: switches the coverage context to each test's node id and records its outcome."""

    def __init__(self, cov: coverage.Coverage, last: set[str]):
        self.cov = cov
        self.last = last
        self.failed: set[str] = set()
        self.passed: set[str] = set()

    def pytest_collection_modifyitems(self, items) -> None:
        items.sort(key=lambda item: item.nodeid in self.last)  # a stable sort: the rest keep their order

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.cov.switch_context(item.nodeid)
        yield
        self.cov.switch_context("")

    def pytest_runtest_logreport(self, report) -> None:
        if report.failed:
            self.failed.add(report.nodeid)
            self.passed.discard(report.nodeid)
        elif report.when == "call" and report.passed and report.nodeid not in self.failed:
            self.passed.add(report.nodeid)


def line_counts(data: coverage.CoverageData, failed: set[str], passed: set[str], root: str) -> dict:
    """relative path -> {line: [failing tests that ran it, passing tests that ran it]}, for the lines at
    least one failing test ran."""
    counts: dict[str, dict[int, list[int]]] = {}
    for path in data.measured_files():
        rel = os.path.relpath(path, root)
        for line, contexts in data.contexts_by_lineno(path).items():
            n_failed = sum(c in failed for c in contexts)
            if n_failed:
                counts.setdefault(rel, {})[line] = [n_failed, sum(c in passed for c in contexts)]
    return counts


def main(argv: list[str]) -> int:
    out, rest = argv[0], argv[1:]
    split = rest.index("--") if "--" in rest else len(rest)
    options, pytest_args = rest[:split], rest[split + 1:]
    last = set(options[options.index("--last") + 1:]) if "--last" in options else set()
    root = os.getcwd()
    sys.path[0] = root  # as `python -m pytest` has it: the project, not this script's folder, comes first
    cov = coverage.Coverage(data_file=None, config_file=False, source=[root],
                            omit=["*/site-packages/*", "*/dist-packages/*"])
    plugin = PerTestContexts(cov, last)
    cov.start()
    try:
        code = pytest.main(pytest_args, plugins=[plugin])
    finally:
        cov.stop()
    result = {"exit_code": int(code), "failed": sorted(plugin.failed), "passed": sorted(plugin.passed),
              "lines": line_counts(cov.get_data(), plugin.failed, plugin.passed, root)}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
