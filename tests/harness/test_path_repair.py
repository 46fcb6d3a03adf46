"""Edits naming a missing file are re-aimed where their own text singles out one file in play, and only
there: real files, real tests; the replies are the ones a small model wrote (placeholder path, folder
dropped)."""

from __future__ import annotations

import pytest

from deltaserve.harness.formats import auto
from deltaserve.harness.formats.symbol import SymbolEdit
from deltaserve.harness.formats.whole import WholeFile
from deltaserve.harness.path_repair import Moved, repair_paths
from deltaserve.tools.search_replace import SearchReplace
from deltaserve.tools.workspace import Workspace

from .test_candidates import try_alone
from .test_small_model_replies import run

SR_PLACEHOLDER = ("path/to/file.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
                  ">>>>>>> REPLACE\n```\n")


def test_a_placeholder_path_goes_to_the_file_holding_the_search_text(project, quick_test_cmd):
    agent, report, _ = run(project, quick_test_cmd, [SR_PLACEHOLDER], edit_format="search_replace",
                           max_steps=1)
    assert report.steps[0].outcome == "tests pass"
    assert "return a + b" in (project / "calc.py").read_text() and not (project / "path").exists()
    assert report.steps[0].apply.files_changed == ["calc.py"]


def test_the_model_is_told_where_its_edit_went(project, quick_test_cmd):
    wrong = SR_PLACEHOLDER.replace("a + b", "b - a")  # applied, tests still fail: the feedback is read
    agent, report, _ = run(project, quick_test_cmd, [wrong, SR_PLACEHOLDER.replace("a - b", "b - a")],
                           edit_format="search_replace", max_steps=2)
    assert [s.outcome for s in report.steps] == ["tests fail", "tests pass"]
    assert "path/to/file.py does not exist, so the edit went to calc.py" in agent.prompts[1][-1]["content"]


@pytest.fixture
def package(tmp_path):
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "summary.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n\n\n"
                                                  "def spread(xs):\n    return max(xs) + min(xs)\n")
    (tmp_path / "stats" / "other.py").write_text("def spread_of(xs):\n    return 0\n\n\n"
                                                "def total(xs):\n    return sum(xs) / len(xs)\n")
    return Workspace(tmp_path)


def test_functions_go_to_the_file_that_defines_them_and_new_files_stay_new(package):
    in_play = ["stats/summary.py", "stats/other.py"]
    fixed = SymbolEdit("summary.py", "def spread(xs):\n    return max(xs) - min(xs)\n")
    new = SymbolEdit("stats/helpers.py", "def clamp(x):\n    return x\n")
    edits, moved = repair_paths([fixed, new], package, in_play)
    assert edits == [SymbolEdit("stats/summary.py", fixed.code), new]
    assert moved == [Moved("summary.py", "stats/summary.py")]


def test_an_ambiguous_or_partial_edit_stays_where_it_was_aimed(package):
    in_play = ["stats/summary.py", "stats/other.py"]
    # both files hold this line: no single file is meant
    ambiguous = SearchReplace("path/to/file.py", "    return sum(xs) / len(xs)\n", "    return 0\n")
    # a whole file with one of summary.py's two functions would delete the other
    partial = WholeFile("path/to/file.py", "def spread(xs):\n    return max(xs) - min(xs)\n")
    edits, moved = repair_paths([ambiguous, partial], package, in_play)
    assert edits == [ambiguous, partial] and moved == []
    # nor does the file name alone move a whole file or a new file's creation
    named = [WholeFile("summary.py", "def spread(xs):\n    return 0\n"),
             SearchReplace("summary.py", "", "x = 1\n")]
    assert repair_paths(named, package, in_play) == (named, [])
    complete = WholeFile("file.py", (package.root / "stats" / "summary.py").read_text().replace("+", "-"))
    assert repair_paths([complete], package, in_play)[1] == [Moved("file.py", "stats/summary.py")]


def test_a_candidate_is_tried_with_its_path_repaired_as_the_agent_would(project, quick_test_cmd):
    tried = try_alone(auto.AutoFormat(), SR_PLACEHOLDER, project, quick_test_cmd, ("calc.py",))
    assert (tried.outcome, tried.failing) == ("tests pass", 0)
    assert "return a - b" in (project / "calc.py").read_text()  # a scratch copy was edited, not the project


def test_a_search_block_naming_the_wrong_existing_file_goes_to_the_one_holding_its_text(package):
    from deltaserve.harness.path_repair import repair_misnamed

    in_play = ["stats/summary.py", "stats/other.py"]
    # a 1.5B model's reply: the function it quotes lives in the module beside the one it named
    misnamed = SearchReplace("stats/summary.py", "def total(xs):\n    return sum(xs) / len(xs)\n",
                             "def total(xs):\n    return sum(xs)\n")
    edits, moved = repair_misnamed([misnamed], package, in_play)
    assert edits[0].path == "stats/other.py" and moved == [Moved("stats/summary.py", "stats/other.py", False)]
    # the text is in the named file (too), in no file, or in two others: left as written
    for search in ("    return sum(xs) / len(xs)\n", "    return 42\n"):
        kept = SearchReplace("stats/summary.py", search, "")
        assert repair_misnamed([kept], package, in_play) == ([kept], [])
    (package.root / "stats" / "third.py").write_text("def total(xs):\n    return sum(xs) / len(xs)\n")
    assert repair_misnamed([misnamed], package, [*in_play, "stats/third.py"])[1] == []
