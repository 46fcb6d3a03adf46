"""Property tests: difflib diffs of random edits apply exactly; model-style corruptions of them either apply
exactly or are refused with a message and no file changed. 2,000 examples in all (see diff_fuzz.py)."""

from __future__ import annotations

import importlib.util
import random
import re
import shutil
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_spec = importlib.util.spec_from_file_location("diff_fuzz", Path(__file__).with_name("diff_fuzz.py"))
diff_fuzz = sys.modules.setdefault("diff_fuzz", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(diff_fuzz)

SETTINGS = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


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
    diff = diff_fuzz.unified_diff(sc)

    def move(m):
        old, new = max(1, int(m.group(1)) + shift), max(1, int(m.group(3)) + shift)
        return f"@@ -{old},{m.group(2) or 1} +{new},{m.group(4) or 1} @@"

    shifted = "\n".join(re.sub(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", move, ln) for ln in diff.split("\n"))
    outcome, detail = _run(sc, shifted)
    assert outcome == "applied", (outcome, detail, shifted)


@settings(max_examples=900, **SETTINGS)
@given(diff_fuzz.scenarios(), st.lists(st.sampled_from(diff_fuzz.CORRUPTIONS), min_size=1, max_size=3, unique=True),
       st.randoms(use_true_random=False))
def test_corrupted_diffs_apply_exactly_or_are_refused_cleanly(sc, kinds, rnd):
    diff = diff_fuzz.unified_diff(sc)
    if sc.context == 0 and "shift_numbers" in kinds:
        kinds = [k for k in kinds if k != "shift_numbers"] or ["fence"]  # see the shifted-numbers test
    for kind in kinds:
        corrupted = diff_fuzz.corrupt(diff, kind, random.Random(rnd.random()), sc)
        diff = corrupted if corrupted is not None else diff
    outcome, detail = _run(sc, diff)
    assert outcome in diff_fuzz.OK_OUTCOMES, (outcome, kinds, detail, diff)
