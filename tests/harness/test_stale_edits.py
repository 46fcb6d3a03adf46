"""SEARCH blocks copied from the first prompt's view of a file the run has edited since: re-aimed at the
lines as they are, applied by the real search_replace format on real files."""

from __future__ import annotations

from deltaserve.harness import formats
from deltaserve.harness.stale_edits import Rebased, rebase_stale_blocks
from deltaserve.tools.search_replace import SearchReplace
from deltaserve.tools.workspace import Workspace

ORIGINAL = ("def hull(pts):\n    lower = half(pts)\n    hull = lower[:-1]\n"
            "    if len(hull) == 2 and hull[0] == hull[1]:\n        return hull[:1]\n    return hull\n")
AFTER_STEP_1 = ORIGINAL.replace("return hull[:1]", "return hull[:2]")


def _workspace(tmp_path, text: str) -> Workspace:
    (tmp_path / "geometry.py").write_text(text)
    return Workspace(tmp_path)


def test_a_block_quoting_lines_an_earlier_edit_changed_replaces_them_as_they_are(tmp_path):
    ws = _workspace(tmp_path, AFTER_STEP_1)
    # a 1.5B model's step 2: the first prompt's lines, indented one level too deep
    stale = SearchReplace("geometry.py", "        if len(hull) == 2 and hull[0] == hull[1]:\n"
                                         "            return hull[:1]\n",
                          "        if len(hull) == 1 or hull[0] == hull[1]:\n            return hull[:1]\n")
    edits, rebased = rebase_stale_blocks([stale], ws, {"geometry.py": ORIGINAL})
    assert rebased == [Rebased("geometry.py", 4, 5)]
    assert edits[0].search == ("        if len(hull) == 2 and hull[0] == hull[1]:\n"
                               "            return hull[:2]\n")
    formats.get("search_replace").apply(edits, ws)
    assert (tmp_path / "geometry.py").read_text() == AFTER_STEP_1.replace(
        "len(hull) == 2 and hull[0] == hull[1]:\n        return hull[:2]",
        "len(hull) == 1 or hull[0] == hull[1]:\n        return hull[:1]")


def test_blocks_that_match_now_or_nowhere_before_are_left_as_written(tmp_path):
    ws = _workspace(tmp_path, AFTER_STEP_1)
    matching = SearchReplace("geometry.py", "        return hull[:2]\n", "        return hull[:3]\n")
    invented = SearchReplace("geometry.py", "    return sorted(hull)\n", "    return hull\n")
    twice = SearchReplace("geometry.py", "    hull = lower[:-1]\n", "    hull = lower\n")  # not stale either
    untouched = SearchReplace("other.py", "x = 1\n", "x = 2\n")
    outside = SearchReplace("../geometry.py", "        return hull[:1]\n", "        return []\n")
    edits = [matching, invented, twice, untouched, outside]
    assert rebase_stale_blocks(edits, ws, {"geometry.py": ORIGINAL}) == (edits, [])
    assert rebase_stale_blocks(edits, ws, {}) == (edits, [])  # no edit of the run yet: nothing is stale


def test_a_block_spanning_lines_an_earlier_edit_inserted_takes_them_whole(tmp_path):
    now = ORIGINAL.replace("    return hull\n", "    hull.sort()\n    hull.reverse()\n    return hull\n")
    ws = _workspace(tmp_path, now)
    stale = SearchReplace("geometry.py", "        return hull[:1]\n    return hull\n",
                          "        return hull[:1]\n    return sorted(hull)\n")
    edits, rebased = rebase_stale_blocks([stale], ws, {"geometry.py": ORIGINAL})
    assert rebased == [Rebased("geometry.py", 5, 8)]
    assert edits[0].search == ("        return hull[:1]\n    hull.sort()\n    hull.reverse()\n"
                               "    return hull\n")


def test_the_agent_applies_a_stale_block_and_says_so(project, quick_test_cmd):
    from deltaserve.harness import Agent

    from .test_small_model_replies import MODEL, scripted

    def block(search, replace):
        return f"calc.py\n```\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n"

    partial = block("    return a - b", "    return a - b + 0")  # kept: the tests fail as before
    stale = block("    return a - b", "    return a + b")  # copied from the first prompt again
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  complete=scripted([partial, stale], calls), edit_format="search_replace", max_steps=2)
    report = agent.run()
    assert [s.outcome for s in report.steps] == ["tests fail", "tests pass"]
    assert "def add(a, b):\n    return a + b\n" in (project / "calc.py").read_text()
