"""Coverage-based fault localization on real pytest projects: the probe runs pytest under coverage (in
bwrap where it works), and the suspects are the functions the failing tests run, those only they run first."""

from __future__ import annotations

import sys
import textwrap

import pytest

from deltaserve.tools import localize as loc
from deltaserve.tools.sandbox import INSTALL_HINT, bwrap_problem
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}; {INSTALL_HINT}")
PYTEST = f"{sys.executable} -m pytest -q -x -p no:cacheprovider"

# The bug sits in a helper no test, task or traceback names: the assertion fails in the test itself.
SHOP = '''\
_RATES = None


def rates():
    global _RATES
    if _RATES is None:  # built by whichever test comes first
        _RATES = {"gold": 20, "silver": 10}
    return _RATES


def _bulk_discount(total):
    if total > 100:
        cut = total // 20  # bug: 10% was asked for
        return total - cut
    return total


def price(items, tier=None):
    total = sum(items)
    total = _bulk_discount(total)
    if tier:
        total -= total * rates()[tier] // 100
    return total
'''
TESTS = '''\
from shop import price


def test_large_orders_get_ten_percent_off():
    assert price([100, 100], tier="silver") == 162


def test_small_orders_pay_full_price():
    assert price([10, 20]) == 30


def test_tiers_take_their_share():
    assert price([50], tier="gold") == 40
'''


@pytest.fixture
def shop(tmp_path):
    (tmp_path / "shop.py").write_text(SHOP)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shop.py").write_text(TESTS)
    return Workspace(tmp_path)


def failing(ws: Workspace) -> list[str]:
    result = run_tests(ws, PYTEST, sandbox="none")
    assert not result.ok and result.failing_tests
    return result.failing_tests


@pytest.mark.parametrize("sandbox", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_the_helper_only_the_failing_test_runs_is_the_suspect(shop, sandbox):
    before = sorted(p.name for p in shop.root.rglob("*"))
    found = loc.localize(shop, failing(shop), PYTEST, timeout=120, sandbox=sandbox)
    assert (found.failed, found.passed) == (1, 2), found.note
    assert found.suspects[0].site() == "shop.py:13-14 (in _bulk_discount)"
    assert found.suspects[0].score == 1.0
    # the ranked lead goes on with the functions the failing test shares with passing ones
    assert len(found.suspects) == loc.TOP_FUNCTIONS and all(s.score < 1.0 for s in found.suspects[1:])
    assert {13, 14} <= found.focus_lines()["shop.py"]
    # the probe's JSON is gone, and neither coverage nor pytest's cache left a file behind
    assert sorted(p.name for p in shop.root.rglob("*")) == before


def test_known_failing_tests_run_last_so_lazy_setup_is_not_theirs(shop):
    """The failing test comes first in its file and is the first to call rates(), which fills a cache:
    run in file order, the cache's construction would run only in a failing test and tie for the top."""
    found = loc.localize(shop, failing(shop), PYTEST, timeout=120, sandbox="none")
    assert [s.name for s in found.suspects if s.score == 1.0] == ["_bulk_discount"]


def test_without_a_passing_test_there_is_nothing_to_contrast(shop):
    (shop.root / "tests" / "test_shop.py").write_text(TESTS.split("\n\n\ndef test_small")[0] + "\n")
    found = loc.localize(shop, failing(shop), PYTEST, timeout=120, sandbox="none")
    assert found.suspects == [] and found.note == "no passing test to contrast with"


@pytest.mark.parametrize("addopts", ["--no-such-plugin-option", "-n 2 --cov=shop"])
def test_an_addopts_the_probe_cannot_take_is_dropped_for_it(shop, addopts):
    """An option of an absent plugin, or of xdist / pytest-cov (which the probe turns off: their workers and
    their own Coverage would leave its data empty), makes a usage error; it runs again without addopts."""
    (shop.root / "pytest.ini").write_text(f"[pytest]\naddopts = {addopts}\n")
    ids = ["tests/test_shop.py::test_large_orders_get_ten_percent_off"]
    found = loc.localize(shop, ids, PYTEST, timeout=120, sandbox="none")
    assert found.suspects[0].name == "_bulk_discount"


def test_other_commands_localize_nothing_and_say_why(shop):
    for command in ("make test", "npm test", f"{sys.executable} -m pytest && echo done", "tox -e py"):
        found = loc.localize(shop, ["tests/test_shop.py::test_x"], command, timeout=60, sandbox="none")
        assert found.suspects == [] and found.note == "not a pytest command"
    assert loc.localize(shop, ["gone/test_x.py::test_y"], PYTEST, 60, "none").note == "no failing test file"


def test_the_interpreter_of_a_pytest_command():
    assert loc.pytest_python("python -m pytest -q") == "python"
    assert loc.pytest_python("/opt/venv/bin/python3.12 -m pytest tests/") == "/opt/venv/bin/python3.12"
    assert loc.pytest_python(f"{sys.executable} -m unittest") is None
    assert loc.pytest_python("python -m pytest 'unclosed") is None
    # a bare `pytest`: the Python of its script's shebang (the one next to this interpreter here)
    shebang_python = loc.pytest_python("pytest -q")
    assert shebang_python is not None and "python" in shebang_python.rsplit("/", 1)[-1]


def test_a_tie_wider_than_the_cap_keeps_the_functions_the_description_names(tmp_path):
    names = ["look", "push", "skip", "parse_args", "as_const", "getitem", "do_truncate", "render_block"]
    (tmp_path / "mod.py").write_text("".join(f"def {n}():\n    return 1\n\n\n" for n in names))
    ws = Workspace(tmp_path)
    lines = {"mod.py": {str(4 * i + 2): [1, 0] for i in range(len(names))}}
    assert loc.rank(ws, lines, 1) == []  # eight at 1.0, nothing to tell them apart
    named = loc.words("The truncate filter returns strings longer than asked")
    assert [s.name for s in loc.rank(ws, lines, 1, named)] == ["do_truncate"]
    # within the cap all stay, the named one first
    few = {"mod.py": {k: v for k, v in list(lines["mod.py"].items())[-3:]}}
    assert [s.name for s in loc.rank(ws, few, 1, named)] == ["do_truncate", "getitem", "render_block"]


def test_scores_follow_ochiai_best_first_and_passing_only_lines_are_left_out(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("""\
        class Box:
            def open(self):
                return 1

            def close(self):
                return 2
        """))
    (tmp_path / "test_m.py").write_text("def test_x():\n    pass\n")
    ws = Workspace(tmp_path)
    # 2 failing tests: line 3 run by both and one passing test, line 6 by one failing test only; line 2 by
    # passing tests only
    counts = {"m.py": {"2": [0, 3], "3": [2, 1], "6": [1, 0]}, "test_m.py": {"2": [2, 0]}}
    ranked = loc.rank(ws, counts, 2)
    assert [(s.name, s.lines, round(s.score, 3)) for s in ranked] == [
        ("Box.open", (3,), round(2 / (2 * 3) ** 0.5, 3)), ("Box.close", (6,), round(1 / 2 ** 0.5, 3))]


def test_only_the_best_functions_are_named(tmp_path):
    """With one failing test every line only it runs scores 1.0 (a __len__ its assert calls), while the
    faulty function, which passing tests run too, scores lower: the best TOP_FUNCTIONS are named, ranked."""
    names = ["__len__", "put", "peek", "keys", "clear"]
    (tmp_path / "m.py").write_text("".join(f"def {n}():\n    return 1\n\n\n" for n in names))
    ws = Workspace(tmp_path)
    counts = {"m.py": {"2": [1, 0], "6": [1, 3], "10": [1, 1], "14": [1, 6], "18": [0, 2]}}
    assert [s.name for s in loc.rank(ws, counts, 1)] == ["__len__", "peek", "put"]


def test_words_split_identifiers():
    assert loc.words("do_truncate TokenStream.look HTTPServer x1 as") == {
        "truncate", "token", "stream", "look", "http", "server"}


def test_failing_tests_that_run_no_workspace_code_say_so(tmp_path):
    tests = "import math\n\n\ndef test_ok():\n    assert math.floor(1.5) == 1\n\n\ndef test_bad():\n"
    (tmp_path / "test_math.py").write_text(tests + "    assert math.floor(1.5) == 2\n")
    ws = Workspace(tmp_path)
    found = loc.localize(ws, ["test_math.py::test_bad"], PYTEST, timeout=120, sandbox="none")
    assert found.suspects == [] and found.note == "coverage saw no code outside the tests"


def test_explaining_a_failed_assert_is_not_suspect(tmp_path):
    """pytest's rewritten asserts call __repr__ (and more) of the values a failed assert compares: code
    only a failing test runs, never the bug. The probe runs plain asserts."""
    (tmp_path / "money.py").write_text(textwrap.dedent("""\
        class Money:
            def __init__(self, cents):
                self.cents = cents

            def __eq__(self, other):
                return self.cents == other.cents

            def __repr__(self):
                return f"Money({self.cents})"


        def with_tax(m):
            if m.cents > 100:
                return Money(m.cents + m.cents // 20)  # bug: 10%
            return Money(m.cents + m.cents // 10)
        """))
    (tmp_path / "test_money.py").write_text(textwrap.dedent("""\
        from money import Money, with_tax


        def test_large():
            assert with_tax(Money(200)) == Money(220)


        def test_small():
            assert with_tax(Money(50)) == Money(55)
        """))
    ws = Workspace(tmp_path)
    found = loc.localize(ws, ["test_money.py::test_large"], PYTEST, timeout=120, sandbox="none")
    assert found.suspects[0].site() == "money.py:14 (in with_tax)"
    assert all(s.name != "Money.__repr__" for s in found.suspects)
