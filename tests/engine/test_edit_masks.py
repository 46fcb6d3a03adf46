"""The edit automata's masks allow only tokens their automata accept (search_replace.py, udiff.py): checked
for every token of the vocabulary at states where the two are easiest to get out of step (a REPLACE line that
may yet become a marker, the last line of a REPLACE part's room, a hunk's lines, a forced close). A token the
mask allows and the automaton refuses would end a request in an error (the 135M model found two)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.constraints.search_replace import replace_room
from tests.engine.test_search_replace_constraint import CALC

SR_HEAD = "calc.py\n```\n<<<<<<< SEARCH\n"
SR_REPLACE = SR_HEAD + "    return a - b\n=======\n"
DIFF_HEAD = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"


@pytest.fixture(scope="module")
def eng(drafting_engine):
    return drafting_engine


def _allowed(eng, constraint) -> list[int]:
    row = torch.zeros((eng.model.vocab_size + 31) // 32, dtype=torch.int32)
    constraint.fill_mask(row)
    bits = ((row.unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1).flatten()[:eng.model.vocab_size]
    return bits.nonzero().flatten().tolist()


def _at(eng, kind: str, text: str, left: int | None = None):
    """The constraint after `text`, with `left` tokens of budget then (None: no budget); under a budget, the
    text stops where the close it forces takes over."""
    ids = eng.tokenizer.encode(text, add_special_tokens=False)
    spec = getattr(GrammarSpec, kind)({"calc.py": CALC})
    constraint = eng.grammars.compile(spec, None if left is None else len(ids) + left)
    for token in ids:
        if left is not None and not constraint.valid_prefix([token]):
            assert constraint.forced_tokens(), text  # the close took over
            break
        assert constraint.accept(token), (text, constraint.error)
    return constraint


@pytest.mark.parametrize("kind,text,left", [
    ("search_replace", "", None),
    ("search_replace", SR_HEAD, None),
    ("search_replace", SR_HEAD + "    return a - b\n", None),  # a line's end: more lines or the divider
    ("search_replace", SR_REPLACE, None),
    ("search_replace", SR_REPLACE + "====", None),  # may yet become a marker line
    ("search_replace", SR_REPLACE + "  >>", None),
    ("search_replace", SR_REPLACE + ">>>>>>", None),  # the terminator's start, already a marker's
    ("search_replace", SR_REPLACE + "x\n" * (replace_room(1) - 1), None),  # the last line of room
    ("search_replace", SR_REPLACE + "x\n" * (replace_room(1) - 1) + "==", None),
    ("search_replace", SR_REPLACE + "    return a", 8),  # the close is forced
    ("search_replace", SR_HEAD + "def add", 12),
    ("udiff", "", None),
    ("udiff", DIFF_HEAD, None),
    ("udiff", DIFF_HEAD + " def add(a, b):\n-    return a - b\n+    return a + b\n", None),
    ("udiff", DIFF_HEAD + " def add(a, b):\n-    ret", 10),
])
def test_every_token_the_mask_allows_is_accepted(eng, kind, text, left):
    constraint = _at(eng, kind, text, left)
    allowed = _allowed(eng, constraint)
    assert allowed
    refused = [t for t in allowed if t not in eng.eos_token_ids and constraint.valid_prefix([t]) != 1]
    assert not refused, [eng.tokenizer.decode([t]) for t in refused[:10]]


@pytest.mark.parametrize("kind,text", [
    ("search_replace", ""),
    ("search_replace", "calc"),  # the path, which a token may run on past into the opening and the file
    ("search_replace", SR_HEAD),  # a SEARCH part may start at any line
    ("search_replace", SR_HEAD + "    return a - b\n"),
    ("udiff", "```diff\n--- a/"),  # the path, then the rest of the header
])
def test_every_token_the_automaton_accepts_is_allowed(eng, kind, text):
    """The other way round: the mask looks ahead only as far as a token can run (TokenTable.reach), and no
    token the automaton takes is left out of it (in a hunk's lines a udiff mask leaves out by design the
    tokens that run on from a line's marker or end: those come as tokens of their own)."""
    constraint = _at(eng, kind, text)
    allowed = set(_allowed(eng, constraint))
    table = eng.grammars.token_table()
    # a udiff mask leaves out by design the tokens that run past a line's end (its newline comes alone)
    by_design = (lambda t: b"\n" in table.token_bytes[t][:-1]) if kind == "udiff" else (lambda t: False)
    left_out = [t for t in range(eng.model.vocab_size) if t not in allowed and t not in table.special
                and not by_design(t) and constraint.valid_prefix([t]) == 1]
    assert not left_out, [eng.tokenizer.decode([t]) for t in left_out[:10]]


PIECES = {
    "search_replace": (SR_REPLACE, ["=", ">", "<", "`", " ", "\n", "x", "-", "REPLACE", "SEARCH", ">>>>>>>"]),
    "udiff": (DIFF_HEAD, [" ", "-", "+", "\n", "@@", "def add(a, b):", "    return a - b", "x", "```"]),
}


@given(kind=st.sampled_from(sorted(PIECES)), picks=st.lists(st.integers(0, 10), max_size=14),
       left=st.sampled_from([None, 12, 40]))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_at_random_states_the_mask_allows_only_what_is_accepted(eng, kind, picks, left):
    head, pieces = PIECES[kind]
    constraint = _at(eng, kind, head, left)
    for i in picks:  # the pieces the constraint takes, in order; the others are skipped
        ids = eng.tokenizer.encode(pieces[i % len(pieces)], add_special_tokens=False)
        if constraint.valid_prefix(ids) == len(ids):
            assert all(constraint.accept(t) for t in ids)
    # the tokens where the two may disagree: those holding marker, fence, diff or blank characters
    tricky = set(_tricky_tokens(eng))
    refused = [t for t in _allowed(eng, constraint) if t in tricky and constraint.valid_prefix([t]) != 1]
    assert not refused, [eng.tokenizer.decode([t]) for t in refused[:10]]


def _tricky_tokens(eng) -> list[int]:
    if not hasattr(eng, "_tricky"):
        table = eng.grammars.token_table()
        eng._tricky = [t for t, data in enumerate(table.token_bytes)
                       if t not in table.special and any(c in data for c in b"<=>`\n -+@")]
    return eng._tricky
