"""The diff an applied edit reports (PatchResult.diff) is `difflib.unified_diff`'s text, byte for byte, as it
was when it came from difflib over whole files, and it costs work linear in the edit: 10,000 one-line
hunks are reported right, and no region of a long file is searched line by line again and again.

The reports are compared with difflib's on random diffs (diff_fuzz's scenarios), on sequences of
SEARCH/REPLACE blocks, on long code-like files with blank and repeated lines (difflib's autojunk) under
many hunks, and on the eval tasks' gold patches."""

from __future__ import annotations

import difflib
import random
import shutil
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from deltaserve.testing import diff_fuzz
from deltaserve.tools import diff_report
from deltaserve.tools.diff_report import Span, compose, replaced
from deltaserve.tools.patch import (
    PatchError,
    SearchReplace,
    apply_patch,
    apply_search_replace_blocks,
    write_file,
)
from deltaserve.tools.workspace import Workspace

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
TASKS = Path(__file__).resolve().parents[2] / "evals" / "tasks"
CODE_LINES = ["", "", "", "    pass", "    return None", "    x = 1", "        continue", "else:", "}",
              "    # TODO", "import os"]


def difflib_report(root: Path, result) -> str:
    """The report as difflib says it over whole files (what PatchResult.diff was built with before)."""
    diffs = []
    for rel in result.files_changed:
        path = root / rel
        old = path.read_bytes().decode() if path.exists() else None
        new = result.new_contents[rel]
        diffs.append("".join(difflib.unified_diff(
            (old or "").replace("\r\n", "\n").splitlines(keepends=True),
            (new or "").replace("\r\n", "\n").splitlines(keepends=True),
            fromfile=f"a/{rel}" if old is not None else "/dev/null",
            tofile=f"b/{rel}" if new is not None else "/dev/null")))
    return "".join(d if d.endswith("\n") or not d else d + "\n" for d in diffs)


def _report_and_difflibs(files: dict[str, str], edit) -> tuple[str, str]:
    """(PatchResult.diff, difflib's report) of `edit(workspace)` run dry on `files`."""
    root = diff_fuzz.scratch_dir("report-")
    try:
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(text.encode())
        result = edit(Workspace(root))
        return result.diff, difflib_report(root, result)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=300, **SETTINGS)
@given(diff_fuzz.scenarios())
def test_the_report_of_a_random_diff_is_difflibs(sc):
    files = {rel: state.text() for rel, state in sc.before.items() if state.text() is not None}
    ours, difflibs = _report_and_difflibs(files, lambda ws: apply_patch(ws, diff_fuzz.unified_diff(sc),
                                                                        dry_run=True))
    assert ours == difflibs


@st.composite
def _blocks_in_turn(draw):
    """A file of code-like lines and SEARCH/REPLACE blocks, each quoting lines found once in the file as
    the blocks before it left it."""
    counter = iter(range(10**6))

    def some_lines(least: int, most: int, name: str) -> list[str]:
        return [draw(st.sampled_from([*CODE_LINES, f"{name}{next(counter)} = 1"]))
                for _ in range(draw(st.integers(least, most)))]

    lines = some_lines(3, 60, "v")
    blocks, current = [], list(lines)
    for _ in range(draw(st.integers(1, 4))):
        if not current:
            break
        i = draw(st.integers(0, len(current) - 1))
        j = draw(st.integers(i + 1, min(len(current), i + 4)))
        search = "".join(line + "\n" for line in current[i:j])
        assume(search.strip() and "".join(x + "\n" for x in current).count(search) == 1)
        new = some_lines(0, 3, "w")
        blocks.append(SearchReplace("f.py", search, "".join(line + "\n" for line in new)))
        current[i:j] = new
    return "".join(line + "\n" for line in lines), blocks


@settings(max_examples=200, **SETTINGS)
@given(_blocks_in_turn())
def test_the_report_of_search_replace_blocks_in_turn_is_difflibs(case):
    text, blocks = case
    try:
        ours, difflibs = _report_and_difflibs(
            {"f.py": text}, lambda ws: apply_search_replace_blocks(ws, blocks, dry_run=True))
    except PatchError:  # refused (a block that changes nothing, ...): no report to check
        assume(False)
    assert ours == difflibs


def _code_file(rnd: random.Random, n_lines: int) -> list[str]:
    """Code-like lines: a third blank or repeated (autojunk's popular lines in a long file), the rest
    distinct."""
    return [rnd.choice(CODE_LINES) if rnd.random() < 0.35 else f"    value_{i} = call({i})"
            for i in range(n_lines)]


def _edited(rnd: random.Random, old: list[str], n_edits: int) -> list[str]:
    """`old` with edits a model makes: lines replaced, blank and repeated lines added or taken out."""
    new = list(old)
    for i in sorted(rnd.sample(range(len(old)), n_edits), reverse=True):
        pool = ["", "    pass", f"    added_{i} = 1", old[rnd.randrange(len(old))]]
        new[i : i + rnd.choice([0, 1, 1, 2])] = [rnd.choice(pool) for _ in range(rnd.choice([0, 1, 2, 3]))]
    return new if new != old else [*new, "    appended = 1"]


@pytest.mark.parametrize("seed", range(24))
def test_the_report_of_many_hunks_on_a_long_file_is_difflibs(seed):
    """Files of 250 to 1,500 lines, where difflib's autojunk leaves blank and repeated lines unmatched, with
    1 to 150 hunks of 0 to 3 context lines."""
    rnd = random.Random(seed)
    old = _code_file(rnd, rnd.choice([250, 600, 1500]))
    new = _edited(rnd, old, rnd.choice([1, 10, 40, 150]))
    diff = "".join(difflib.unified_diff([x + "\n" for x in old], [x + "\n" for x in new], "a/f.py", "b/f.py",
                                        n=rnd.choice([0, 1, 3])))
    ours, difflibs = _report_and_difflibs({"f.py": "".join(x + "\n" for x in old)},
                                          lambda ws: apply_patch(ws, diff, dry_run=True))
    assert ours == difflibs


def _stretch(name: str, n_lines: int, blank_every: int | None) -> list[str]:
    return ["" if blank_every and i % blank_every == blank_every - 1 else f"{name}_{i} = {i}"
            for i in range(n_lines)]


@pytest.mark.parametrize("blank_every", [None, 10])  # 10: blank lines popular (autojunk) in the file
@pytest.mark.parametrize("blanks", [(1, 2), (3, 2), (2, 4)])  # a run of blank lines, before -> after
@pytest.mark.parametrize("left, right", [(100, 150), (150, 100), (120, 120)])
def test_blank_lines_added_or_taken_out_beside_blank_lines_are_placed_as_difflib_places_them(
        left, right, blanks, blank_every):
    """Which blank line of a run an added one goes after is which of the equal stretches either side
    difflib matches first (the one with the longer run of lines it matches on; the earlier on a tie):
    regions of 100 lines and more, where the stretches are scored instead of searched."""
    before, after = blanks
    head, tail = _stretch("head", left, blank_every), _stretch("tail", right, blank_every)
    old, new = [*head, *[""] * before, *tail], [*head, *[""] * after, *tail]
    diff = "".join(difflib.unified_diff([x + "\n" for x in old], [x + "\n" for x in new], "a/f.py", "b/f.py",
                                        n=0))
    ours, difflibs = _report_and_difflibs({"f.py": "".join(x + "\n" for x in old)},
                                          lambda ws: apply_patch(ws, diff, dry_run=True))
    assert ours == difflibs


@pytest.mark.parametrize("task", sorted(p.name for p in TASKS.iterdir() if (p / "gold.diff").exists()))
def test_the_report_of_each_eval_tasks_gold_patch_is_difflibs(task, tmp_path):
    """Real patches on real repositories: the diff, and the same change as whole-file writes."""
    repo = shutil.copytree(TASKS / task / "repo", tmp_path / "repo")
    gold = (TASKS / task / "gold.diff").read_text()
    result = apply_patch(Workspace(repo), gold, dry_run=True)
    assert result.diff == difflib_report(repo, result)
    for rel, text in result.new_contents.items():
        if text is not None:
            whole = write_file(Workspace(repo), rel, text, dry_run=True)
            assert whole.diff == difflib_report(repo, whole)


def _one_line_hunks(n_hunks: int, spacing: int) -> tuple[list[str], str]:
    """A file of `spacing` lines per hunk and a diff of hunks with no context lines, each replacing the
    middle line of its stretch."""
    old = [f"line_{i} = compute({i})\n" for i in range(n_hunks * spacing)]
    diff = ["--- a/big.py\n", "+++ b/big.py\n"]
    for k in range(n_hunks):
        i = k * spacing + spacing // 2
        diff += [f"@@ -{i + 1} +{i + 1} @@\n", "-" + old[i], f"+line_{i} = changed({i})\n"]
    return old, "".join(diff)


def test_10000_one_line_hunks_are_reported_right(workspace):
    """Each hunk reported with 3 lines of context either side: what difflib says of one such change (the
    hunks are 8 lines apart, so each stands alone), at its own line numbers."""
    old, diff = _one_line_hunks(10_000, 8)
    ws = workspace({"big.py": "".join(old)})
    result = apply_patch(ws, diff)
    expected = ["--- a/big.py\n", "+++ b/big.py\n"]
    for k in range(10_000):
        i = k * 8 + 4
        expected += [f"@@ -{i - 2},7 +{i - 2},7 @@\n", *(" " + x for x in old[i - 3 : i]), "-" + old[i],
                     f"+line_{i} = changed({i})\n", *(" " + x for x in old[i + 1 : i + 4])]
    assert result.diff == "".join(expected)
    changed = [f"line_{i} = changed({i})\n" if i % 8 == 4 else line for i, line in enumerate(old)]
    assert (ws.root / "big.py").read_text() == "".join(changed)
    lone = "".join(difflib.unified_diff(old[:8], [*old[:4], "line_4 = changed(4)\n", *old[5:8]], "a/big.py",
                                        "b/big.py"))
    assert result.diff.startswith(lone)


def test_a_report_searches_each_line_a_bounded_number_of_times(workspace, monkeypatch):
    """The work, not the time: difflib's own search (find_longest_match) scans a region line by line; over
    1,000 hunks 4 lines apart it scanned the whole file again for each hunk (2 million lines for a
    4,000-line file). Now only regions of a few dozen lines are scanned, each line a few times."""
    scanned = []
    search = difflib.SequenceMatcher.find_longest_match

    def counting(self, alo=0, ahi=None, blo=0, bhi=None):
        scanned.append((len(self.a) if ahi is None else ahi) - alo)
        return search(self, alo, ahi, blo, bhi)

    monkeypatch.setattr(difflib.SequenceMatcher, "find_longest_match", counting)
    old, diff = _one_line_hunks(1_000, 4)
    apply_patch(workspace({"big.py": "".join(old)}), diff, dry_run=True)
    assert sum(scanned) < 4 * len(old)


@st.composite
def _edits_in_turn(draw):
    """A file of distinct lines and two edits in turn, each a few replacements of distinct new lines."""
    counter = iter(range(10**6))
    old = [f"old {next(counter)}" for _ in range(draw(st.integers(0, 40)))]

    def edit(lines):
        cuts = sorted(draw(st.lists(st.integers(0, len(lines)), min_size=2, max_size=8)))
        spans, out, done = [], list(lines), 0
        for start, end in zip(cuts[::2], cuts[1::2], strict=False):
            new_lines = [f"new {next(counter)}" for _ in range(draw(st.integers(0, 3)))]
            spans.append((start, end - start, len(new_lines)))
            out[start + done : end + done] = new_lines
            done += len(new_lines) - (end - start)
        return replaced(spans), out

    first, mid = edit(old)
    then, new = edit(mid)
    return old, new, first, then


@settings(max_examples=300, **SETTINGS)
@given(_edits_in_turn())
def test_composed_spans_line_up_the_first_and_the_last_version(case):
    """Outside the composed spans the old and the new lines are the same and in step (no line needed a
    span of its own, nothing out of line)."""
    old, new, first, then = case
    spans = compose(first, then)
    assert diff_report._checked(spans, old, new) == spans
    assert all(a.old_end <= b.old_start and a.new_end <= b.new_start for a, b in pairwise(spans))


def test_spans_from_replacements_count_the_lines_each_one_added():
    assert replaced([(10, 2, 5), (0, 1, 0)]) == [Span(0, 1, 0, 0), Span(10, 12, 9, 14)]
