"""The unified-diff constraint (engine/constraints/udiff.py): whatever a model's weights prefer, every hunk it
completes names a file in play and its context and removed lines are consecutive lines of that file, so the
tools' own patcher applies a diff the model ends; drafts are cut to what the constraint accepts."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaserve.engine import SamplingParams
from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.constraints.udiff import ADDED_ROOM
from deltaserve.errors import InvalidRequestError
from deltaserve.harness.formats.udiff import UdiffFormat
from deltaserve.tools.workspace import Workspace
from tests.engine.conftest import RANDOM_FILE
from tests.engine.test_search_replace_constraint import CALC, NOTES


@pytest.fixture(scope="module")
def eng(drafting_engine):
    return drafting_engine


def _old_runs(text: str) -> list[tuple[str, str]]:
    """(path, old side) per hunk of a diff: its context and removed lines joined."""
    runs, path, old = [], None, None
    for line in text.split("\n"):
        if line.startswith(("--- a/", "@@")) and old is not None:  # the hunk before ends
            runs.append((path, old))
            old = None
        if line.startswith("+++ b/"):
            path = line[len("+++ b/"):]
        elif line.startswith("@@"):
            old = ""
        elif old is not None and line.startswith((" ", "-")) and not line.startswith("--- a/"):
            old += line[1:] + "\n"
        elif old is not None and line == "":
            old += "\n"
    if old is not None:
        runs.append((path, old))
    return runs


@given(files=st.one_of(
           st.sampled_from([{"calc.py": CALC}, {"calc.py": CALC, "pkg/notes.py": NOTES}]),
           st.fixed_dictionaries({"a.py": RANDOM_FILE}),
           st.fixed_dictionaries({"a.py": RANDOM_FILE, "b/c.py": RANDOM_FILE})),
       seed=st.integers(0, 2**31), temperature=st.sampled_from([0.0, 1.0, 1.6]),
       max_tokens=st.sampled_from([48, 96, 160]))
@settings(max_examples=24, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_reply_is_a_diff_that_applies(eng, files, seed, temperature, max_tokens, tmp_path):
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed,
                            grammar=GrammarSpec.udiff(files))
    out = eng.generate("Fix the bug.", params)[0]
    # the budget closes the reply in time ("length" where it did): it ends, never cut off inside a hunk
    assert out.error is None and out.finish_reason in ("stop", "length"), out.text
    assert out.text.rstrip("\n").endswith("```"), out.text
    assert out.text.startswith("```diff\n--- a/"), out.text
    for path, old in _old_runs(out.text):
        assert path in files, out.text
        assert old.rstrip("\n") in files[path], (old, out.text)
    root = tmp_path / f"ws{seed}"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    fmt = UdiffFormat()
    fmt.apply(fmt.parse(out.text), Workspace(root), dry_run=True)  # raises PatchError if it does not


def test_a_written_diff_is_accepted_and_a_wrong_one_is_not(eng):
    good = ("```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
            "+    return a + b\n\n@@ -5 +5 @@\n def mul(a, b):\n-    return a * b\n+    return b * a\n```\n")
    constraint = eng.grammars.compile(GrammarSpec.udiff({"calc.py": CALC}))
    ids = _tokens(eng, good)
    assert constraint.valid_prefix(ids) == len(ids)
    assert all(constraint.accept(t) for t in ids) and constraint.accept(sorted(eng.eos_token_ids)[0])
    head = "```diff\n--- a/calc.py\n+++ b/calc.py\n"
    for bad in ("```diff\n--- a/other.py\n",  # not a file in play
                head + "@@ -1 +1 @@\n-    return a * c\n",  # not the file's line
                head + "@@ -1 +1 @@\n def add(a, b):\n def mul(a, b):\n",  # not the next line
                head + "@@ -1 +1 @@\n+x\n```",  # a hunk with no old line
                head + "@@ -1 +1 @@\n def add(a, b):\n```",  # no change
                head + "@@ -1 +1 @@\n\n+x\n```",  # only a blank old line
                head + "@@ -5 +5 @@\n-def mul(a, b):\n@@ -1 +1 @@\n def add(a, b):\n"):  # above the last
        fresh = eng.grammars.compile(GrammarSpec.udiff({"calc.py": CALC}))
        ids = _tokens(eng, bad)
        assert fresh.valid_prefix(ids) < len(ids), bad


def test_a_hunk_ends_only_where_its_old_lines_are_found_once(eng):
    twice = "x = 1\ndef f(x):\n    return x\nx = 1\n    pass\n"
    head = "```diff\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n"
    c = eng.grammars.compile(GrammarSpec.udiff({"a.py": twice}))
    ids = _tokens(eng, head + "-x = 1\n+x = 2\n```")  # "x = 1" is at lines 1 and 4: the tools refuse it
    assert c.valid_prefix(ids) < len(ids)
    ids = _tokens(eng, head + "-x = 1\n+x = 2\n def f(x):\n```")  # with the line below, found once
    assert c.valid_prefix(ids) == len(ids)
    ids = _tokens(eng, head + " x = 1\n-    pass\n+x\n```")  # the "x = 1" above "    pass": found once
    assert c.valid_prefix(ids) == len(ids)
    blank_end = eng.grammars.compile(GrammarSpec.udiff({"a.py": "x = 1\n\n\n"}))
    ids = _tokens(eng, head + " \n")  # from the trailing blank lines no hunk can be placed: none starts there
    assert blank_end.valid_prefix(ids) < len(ids)


def test_added_lines_are_capped_and_the_mask_matches_acceptance(eng):
    import torch

    constraint = eng.grammars.compile(GrammarSpec.udiff({"calc.py": CALC}))
    head = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n def add(a, b):\n"
    assert all(constraint.accept(t) for t in _tokens(eng, head))
    for _ in range(ADDED_ROOM):
        assert all(constraint.accept(t) for t in _tokens(eng, "+x\n"))
    assert constraint.valid_prefix(_tokens(eng, "+")) == 0  # no room: an old line, a hunk, a file or the end
    row = torch.zeros((eng.model.vocab_size + 31) // 32, dtype=torch.int32)
    constraint.fill_mask(row)
    allowed = [t for t in range(eng.model.vocab_size) if row[t // 32] >> (t % 32) & 1]
    assert allowed and all(constraint.valid_prefix([t]) == 1 for t in allowed)


def test_bad_specs_are_refused(eng):
    for files in ({}, {"a.py": ""}):
        with pytest.raises(InvalidRequestError):
            eng.add_request("x", SamplingParams(grammar={"kind": "udiff", "source": {"files": files}}))


def _tokens(eng, text: str) -> list[int]:
    return eng.tokenizer.encode(text, add_special_tokens=False)
