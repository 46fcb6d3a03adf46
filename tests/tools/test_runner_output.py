"""Test output as real runners print it: pytest 9's subtests, colour codes, a 100 MB flood.

The files under runner_output/ are real pytest output, captured once from SUBTESTS_SOURCE (each file's
header says which pytest and which command); the live tests run the installed pytest on the same file, and
a real process prints 100 MB."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from deltaserve.tools.test_output import (
    failing_test_names,
    parse_test_output,
    without_ansi,
    without_durations,
)
from deltaserve.tools.tests import HEAD_BYTES, MAX_OUTPUT_BYTES, TAIL_BYTES, run_tests

CAPTURED = Path(__file__).parent / "runner_output"
NO_PLUGINS = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
PYTEST_9 = pytest.mark.skipif(pytest.version_tuple < (9,), reason="subtests are built into pytest 9 on")

SUBTESTS_SOURCE = '''\
import pytest


def test_plain_ok():
    assert True


def test_plain_bad():
    assert 1 == 2


def test_numbers(subtests):
    for i in range(4):
        with subtests.test(msg="even", i=i):
            assert i % 2 == 0


def test_unnamed_subtest(subtests):
    with subtests.test():
        assert "a" == "b"


def test_all_subtests_pass(subtests):
    for i in range(3):
        with subtests.test(i=i):
            assert i >= 0


def test_skipped_subtest(subtests):
    with subtests.test(msg="later"):
        pytest.skip("not yet")
'''
# pytest says "6 failed, 3 passed, 1 skipped, 5 subtests passed": the 3 failed subtests are among the 6
SUBTESTS_COUNTS = (3 + 5, 6, 0, ["test_sub.py::test_plain_bad", "test_sub.py::test_numbers",
                                 "test_sub.py::test_unnamed_subtest"])


def _captured(name: str) -> str:
    """A fixture file's runner output, its header (up to the "# ---" line) left out."""
    return (CAPTURED / name).read_text().split("# ---\n", 1)[1]


def test_pytest9_subtests_count_as_passed_and_failed_tests():
    assert parse_test_output(_captured("pytest9_subtests.txt")) == SUBTESTS_COUNTS


def test_colour_codes_change_nothing_the_parsers_read():
    plain, colour = _captured("pytest9_subtests.txt"), _captured("pytest9_subtests_color.txt")
    assert "\x1b[31mFAILED\x1b[0m" in colour
    assert parse_test_output(colour) == SUBTESTS_COUNTS
    assert failing_test_names(colour) == failing_test_names(plain) == [
        "test_plain_bad", "test_numbers", "test_unnamed_subtest"]
    summary = "6 failed, 3 passed, 1 skipped, 5 subtests passed"
    assert without_durations(without_ansi(colour)).splitlines()[-1] == summary


def test_escape_codes_of_every_kind_are_taken_out():
    text = "\x1b[1;31mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b]0;title\x07\x1b(Bdone\x1b[2K"
    assert without_ansi(text) == "red link done"


@PYTEST_9
def test_a_project_whose_pytest_config_asks_for_colour_is_read_right(workspace):
    ws = workspace({"pytest.ini": "[pytest]\naddopts = --color=yes\n", "test_sub.py": SUBTESTS_SOURCE})
    res = run_tests(ws, "python -m pytest -q -p no:cacheprovider", timeout=120, env=NO_PLUGINS)
    assert res.exit_code == 1 and "\x1b" not in res.output
    assert (res.passed, res.failed, res.errors, res.failing_tests) == SUBTESTS_COUNTS


def test_100mb_of_output_stops_at_the_limit_in_bounded_memory(workspace):
    """A real process printing 100 MB: killed past the limit, the output a head and a tail that says why,
    and the reader never holding more than a few of its 64 KiB chunks."""
    ws = workspace({})
    cmd = ("python -c \"import sys; [sys.stdout.write('x' * 1023 + '\\n') for _ in range(100 * 1024)]; "
           "print('THE END')\"")
    tracemalloc.start()
    try:
        res = run_tests(ws, cmd, timeout=300)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.output_limit_exceeded and not res.timed_out and not res.ok
    assert res.summary().startswith("STOPPED") and res.output_truncated
    assert "THE END" not in res.output
    assert res.output.rstrip().endswith(f"the output passed the limit of {MAX_OUTPUT_BYTES} bytes, so the "
                                        "test process group was killed]")
    assert len(res.output) < HEAD_BYTES + TAIL_BYTES + 300
    assert peak < 4 << 20  # the 100 MB (or the 64 MiB read before the kill) was never held
