"""Property tests: difflib diffs of random edits apply exactly; model-style corruptions of them either apply
exactly or are refused with a message and no file changed; any mangled diff at all either applies as its
result reports or changes nothing. 2,400 examples in all (600 + 500 + 700 + 200 SEARCH/REPLACE + 400
mangled); the generators are in deltaserve/testing/diff_fuzz.py."""

from __future__ import annotations

import random
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaserve.testing import diff_fuzz

SETTINGS = dict(
    deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def _run(sc, diff):
    root = diff_fuzz.scratch_dir("prop-")
    try:
        return diff_fuzz.check(sc, diff, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=600, **SETTINGS)
@given(diff_fuzz.scenarios())
def test_difflib_diff_applies_exactly(sc):
    diff = diff_fuzz.unified_diff(sc)
    outcome, detail = _run(sc, diff)
    assert outcome == "applied", (outcome, detail, diff)


@settings(max_examples=500, **SETTINGS)
@given(diff_fuzz.scenarios(unique=True, min_context=1), st.sampled_from([-50, -5, -1, 1, 3, 40, 1000]))
def test_shifted_line_numbers_still_apply(sc, shift):
    """Every hunk has context here: a hunk with none (difflib n=0) can only be placed by its line number, so a
    wrong number cannot be detected there."""
    shifted = diff_fuzz.shift_line_numbers(diff_fuzz.unified_diff(sc), shift)
    outcome, detail = _run(sc, shifted)
    assert outcome == "applied", (outcome, detail, shifted)


@settings(max_examples=700, **SETTINGS)
@given(
    diff_fuzz.scenarios(),
    st.lists(st.sampled_from(diff_fuzz.CORRUPTIONS), min_size=1, max_size=3, unique=True),
    st.randoms(use_true_random=False),
)
def test_corrupted_diffs_apply_exactly_or_are_refused_cleanly(sc, kinds, rnd):
    diff = diff_fuzz.unified_diff(sc)
    if sc.context == 0 and "shift_numbers" in kinds:
        kinds = [k for k in kinds if k != "shift_numbers"] or ["fence"]  # see the shifted-numbers test
    for kind in kinds:
        corrupted = diff_fuzz.corrupt(diff, kind, random.Random(rnd.random()), sc)
        diff = corrupted if corrupted is not None else diff
    outcome, detail = _run(sc, diff)
    assert outcome in diff_fuzz.OK_OUTCOMES, (outcome, kinds, detail, diff)


@st.composite
def _sr_case(draw):
    n = draw(st.integers(1, 30))
    indents = draw(st.lists(st.sampled_from(["", "    ", "        ", "\t"]), min_size=n, max_size=n))
    old = [f"{ind}line_{k} = {k}" for k, ind in enumerate(indents)]
    i = draw(st.integers(0, n - 1))
    j = draw(st.integers(i + 1, min(n, i + 6)))
    base = indents[i]
    repl = [f"{base}{draw(st.sampled_from(['', '    ']))}new_{k}()" for k in range(draw(st.integers(0, 4)))]
    crlf = draw(st.booleans())
    final = draw(st.booleans())
    dedent = draw(st.booleans()) and all(old[k].startswith(base) for k in range(i, j)) and base != ""
    return old, i, j, repl, crlf, final, dedent


@settings(max_examples=200, **SETTINGS)
@given(_sr_case())
def test_search_replace_applies_exactly(case):
    """A SEARCH block quoting lines i..j (optionally with the block's common indentation removed, as models
    often do) replaces exactly those lines; newline style and final newline are kept."""
    from deltaserve.tools.patch import apply_search_replace
    from deltaserve.tools.workspace import Workspace

    old, i, j, repl, crlf, final, dedent = case
    nl = "\r\n" if crlf and len(old) > 1 else "\n"
    new = old[:i] + repl + old[j:]
    search, replace = old[i:j], repl
    if dedent:
        cut = len(old[i]) - len(old[i].lstrip())
        search = [s[cut:] for s in search]
        replace = [r[cut:] for r in replace]
    root = diff_fuzz.scratch_dir("sr-")
    try:
        (root / "f.py").write_bytes((nl.join(old) + (nl if final else "")).encode())
        apply_search_replace(
            Workspace(root), "f.py", "\n".join(search) + "\n", "".join(r + "\n" for r in replace)
        )
        want = nl.join(new) + (nl if final and new else "")
        assert (root / "f.py").read_bytes() == want.encode()
    finally:
        shutil.rmtree(root, ignore_errors=True)


HOSTILE_LINES = [
    "", "@@ @@", "@@ -1,3 +1,3 @@", "--- a/f0.py", "+++ b/f0.py", "--- /dev/null", "+++ /dev/null",
    "new mode 100755", "new mode 100999", "old mode 100644", "new file mode 104777",
    "deleted file mode 100644",
    "diff --git a/f0.py b/f0.py", "I fixed the bug above.", "```diff", "```", "+added = '\x00'", "-    pass",
    " context", "+", "-", "\\ No newline at end of file", "rename from f0.py", "rename to f1.py",
]


@st.composite
def _hostile_diff(draw):
    """A real diff of a random edit, then lines dropped, duplicated, swapped or replaced by diff-ish junk."""
    sc = draw(diff_fuzz.scenarios())
    lines = diff_fuzz.unified_diff(sc).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        op = draw(st.sampled_from(["drop", "dup", "insert", "replace", "truncate"]))
        junk = draw(st.sampled_from(HOSTILE_LINES) | st.text(max_size=12))
        if op == "drop" and lines:
            del lines[i]
        elif op == "dup" and lines:
            lines.insert(i, lines[i])
        elif op == "insert":
            lines.insert(i, junk)
        elif op == "replace" and lines:
            lines[i] = junk
        elif op == "truncate":
            lines = lines[:i]
    return sc, "\n".join(lines)


@settings(max_examples=400, **SETTINGS)
@given(_hostile_diff())
def test_any_diff_applies_as_reported_or_changes_nothing(case):
    """Whatever the diff: a PatchError with every file as it was, or success where the files it reports
    are on disk exactly as reported (deleted ones gone), it reports at least one, and no other file
    changed."""
    from deltaserve.tools.patch import PatchError, apply_patch
    from deltaserve.tools.workspace import Workspace

    sc, diff = case
    root = diff_fuzz.scratch_dir("any-")
    try:
        diff_fuzz._write(root, sc.before)
        before = diff_fuzz._hashes(root)
        try:
            result = apply_patch(Workspace(root), diff)
        except PatchError as exc:
            assert exc.message.strip()
            assert diff_fuzz._hashes(root) == before, diff
            return
        assert result.files_changed, diff
        for rel in result.files_changed:
            want = result.new_contents[rel]
            if want is None:
                assert not (root / rel).exists(), (rel, diff)
            else:
                assert "\x00" not in want
                data = (root / rel).read_bytes()
                assert data.decode("utf-8") == want, (rel, diff)
        after = diff_fuzz._hashes(root)
        untouched = {p for p in before | after if p not in result.files_changed}
        assert {p: after.get(p) for p in untouched} == {p: before.get(p) for p in untouched}, diff
    finally:
        shutil.rmtree(root, ignore_errors=True)
