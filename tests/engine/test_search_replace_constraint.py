"""The SEARCH/REPLACE constraint (engine/constraints/search_replace.py): whatever a model's weights prefer,
every block it completes names a file in play and quotes a run of that file's whole lines, so the tools'
own parser reads it and its SEARCH text is found; REPLACE text stays free but never holds a marker line;
drafts are cut to what the constraint accepts; a request ends cleanly, never in an error state."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaserve.engine import SamplingParams
from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.constraints.search_replace import SearchReplaceConstraint, replace_room
from deltaserve.errors import InvalidRequestError
from deltaserve.harness.formats.search_replace import SearchReplaceFormat
from deltaserve.tools.search_replace import parse_search_replace_blocks
from deltaserve.tools.workspace import Workspace
from tests.engine.conftest import RANDOM_FILE

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
NOTES = "# notes\nx = 1\ny = [x,\n     2]\n"


@pytest.fixture(scope="module")
def eng(drafting_engine):
    return drafting_engine


def _file_lines(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


@given(files=st.one_of(
           st.sampled_from([{"calc.py": CALC}, {"calc.py": CALC, "pkg/notes.py": NOTES},
                            {"one_line.txt": "only line, no newline"}]),
           st.fixed_dictionaries({"a.py": RANDOM_FILE}),
           st.fixed_dictionaries({"a.py": RANDOM_FILE, "b/c.py": RANDOM_FILE})),
       seed=st.integers(0, 2**31), temperature=st.sampled_from([0.0, 1.0, 1.6]),
       max_tokens=st.sampled_from([48, 96, 160]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_reply_holds_blocks_that_apply(eng, files, seed, temperature, max_tokens, tmp_path):
    params = SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=seed,
                            grammar=GrammarSpec.search_replace(files))
    out = eng.generate("Fix the bug.", params)[0]
    # the budget closes the reply in time: never cut off inside a block (the end token may not fit)
    assert out.error is None and out.finish_reason in ("stop", "length"), out.text
    assert out.text.rstrip().endswith(">>>>>>> REPLACE\n```"), out.text
    blocks = parse_search_replace_blocks(out.text)
    assert blocks, out.text  # every reply holds at least one edit
    for block in blocks:
        assert block.path in files and block.search.strip(), out.text
    first = blocks[0]  # quoted from the file as it is: whole lines, from a line start
    assert ("\n" + _file_lines(files[first.path])).find("\n" + first.search) != -1, out.text
    # and the tools apply them all, in order (a later block quotes the file as the earlier ones left it)
    root = tmp_path / f"ws{seed}"
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    if any(b.search != b.replace for b in blocks):  # a reply of unchanged blocks only is refused as such
        SearchReplaceFormat().apply(blocks, Workspace(root), dry_run=True)  # raises PatchError if not


def test_the_structure_is_drafted_and_drafts_that_break_it_are_cut(eng):
    # a prediction that is no block at all: every draft of it is cut; the block's fixed text is drafted
    params = SamplingParams(max_tokens=120, prediction="print('hello')\n" * 4,
                            grammar=GrammarSpec.search_replace({"calc.py": CALC}))
    out = eng.generate("Fix the bug.", params)[0]
    assert out.text.startswith("calc.py\n```\n<<<<<<< SEARCH\n")
    assert out.metrics.drafts["grammar"].accepted > 0
    assert "prediction" not in out.metrics.drafts or out.metrics.drafts["prediction"].accepted == 0


def _constraint(eng, files) -> SearchReplaceConstraint:
    return eng.grammars.compile(GrammarSpec.search_replace(files))


def _tokens(eng, text: str) -> list[int]:
    return eng.tokenizer.encode(text, add_special_tokens=False)


def test_a_written_block_is_accepted_and_a_wrong_search_is_not(eng):
    good = "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```"
    c = _constraint(eng, {"calc.py": CALC})
    ids = _tokens(eng, good)
    assert c.valid_prefix(ids) == len(ids)
    assert all(c.accept(t) for t in ids) and c.accept(sorted(eng.eos_token_ids)[0]) and c.done
    for bad in ("calc.py\n```\n<<<<<<< SEARCH\n    return a * c\n",  # not the file's text
                "calc.py\n```\n<<<<<<< SEARCH\nreturn a - b\n",  # not from a line start
                "other.py\n",  # not a file in play
                "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n=======\n"):  # a marker in REPLACE
        fresh = _constraint(eng, {"calc.py": CALC})
        ids = _tokens(eng, bad)
        assert fresh.valid_prefix(ids) < len(ids), bad


def test_a_later_block_quotes_the_file_as_the_blocks_before_left_it(eng):
    first = ("calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
             ">>>>>>> REPLACE\n```\n\n")
    again = "calc.py\n```\n<<<<<<< SEARCH\n    return a {} b\n=======\n"
    for sign, ok in (("+", True), ("-", False)):
        c = _constraint(eng, {"calc.py": CALC})
        assert all(c.accept(t) for t in _tokens(eng, first))
        ids = _tokens(eng, again.format(sign))
        assert (c.valid_prefix(ids) == len(ids)) is ok, sign


def test_a_blank_search_part_takes_no_divider(eng):
    c = _constraint(eng, {"calc.py": CALC})
    ids = _tokens(eng, "calc.py\n```\n<<<<<<< SEARCH\n\n=======\n")
    assert c.valid_prefix(ids) < len(ids)


def test_a_search_part_starts_only_where_it_can_take_its_divider(eng):
    # from the trailing blank lines no run holds text; from the last line, no run is found once
    head = "a.py\n```\n<<<<<<< SEARCH\n"
    twice = "    return x\nx = 1\n    return x\n"
    for text, bad in (("x = 1\n    \n\n", "    \n"), (twice, "    return x\n=")):
        c = _constraint(eng, {"a.py": text})
        ids = _tokens(eng, head + bad)
        assert c.valid_prefix(ids) < len(ids), (text, bad)
    c = _constraint(eng, {"a.py": twice})  # found once only with the line below
    ids = _tokens(eng, head + "    return x\nx = 1\n=======\n")
    assert c.valid_prefix(ids) == len(ids)


def test_new_code_holds_no_nul_byte(eng):
    nul = [t for t, data in enumerate(eng.grammars.token_table().token_bytes) if b"\0" in data]
    assert nul  # the tiny model's byte tokens hold one
    c = _constraint(eng, {"calc.py": CALC})
    assert all(c.accept(t) for t in _tokens(eng, "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n"))
    assert not any(c.valid_prefix([t]) for t in nul)


def test_rollback_returns_to_the_same_mask(eng):
    import torch

    c = _constraint(eng, {"calc.py": CALC})
    before = torch.zeros(1, (eng.model.vocab_size + 31) // 32, dtype=torch.int32)
    c.fill_mask(before[0])
    ids = _tokens(eng, "calc.py\n```\n<<<<<<< SEARCH\ndef")
    assert all(c.accept(t) for t in ids)
    c.rollback(len(ids))
    after = torch.zeros_like(before)
    c.fill_mask(after[0])
    assert torch.equal(before, after)


def test_a_looping_replace_part_is_closed_at_its_room(eng):
    c = _constraint(eng, {"calc.py": CALC})
    head = "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n"
    assert all(c.accept(t) for t in _tokens(eng, head))
    for _ in range(replace_room(1)):
        assert all(c.accept(t) for t in _tokens(eng, "x\n"))
    assert c.valid_prefix(_tokens(eng, "x\n")) == 0  # no room left: only the terminator
    closing = _tokens(eng, ">>>>>>> REPLACE\n```")
    assert c.valid_prefix(closing) == len(closing)


def test_near_its_budget_a_reply_is_closed_the_cheapest_way(eng):
    head = _tokens(eng, "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a")
    c = eng.grammars.compile(GrammarSpec.search_replace({"calc.py": CALC}), max_tokens=len(head) + 30)
    assert all(c.accept(t) for t in head)
    plus = _tokens(eng, " +")[0]
    for _ in range(30):  # the new code goes on until the budget calls for the close
        if not c.valid_prefix([plus]):
            break
        assert not c.closed_by_budget and c.accept(plus)
    assert c.closed_by_budget
    closing = eng.tokenizer.decode(c.forced_tokens())
    assert closing == "\n>>>>>>> REPLACE\n```", closing
    assert c.valid_prefix(_tokens(eng, " + b")) == 0  # nothing else may come now
    for t in c.forced_tokens():
        assert c.accept(t)
    assert c.accept(sorted(eng.eos_token_ids)[0]) and c.done
    c.rollback(1 + len(_tokens(eng, closing)))  # rolled back to before the close: the close is still due
    assert eng.tokenizer.decode(c.forced_tokens()) == closing
    c.rollback(1)  # and before the token that called for it: free again
    assert c.valid_prefix(_tokens(eng, " + b")) > 0


def test_a_reply_the_budget_closed_finishes_as_length(eng):
    # the tiny model never ends a block by itself within 40 tokens: the budget closes each reply
    spec = GrammarSpec.search_replace({"calc.py": CALC})
    for seed in range(4):
        params = SamplingParams(max_tokens=40, temperature=1.0, seed=seed, grammar=spec)
        out = eng.generate("Fix the bug.", params)[0]
        assert out.finish_reason == "length" and out.text.endswith(">>>>>>> REPLACE\n```"), out.text


def test_a_budget_too_small_for_another_block_ends_the_reply(eng):
    block = "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```"
    ids = _tokens(eng, block)
    roomy = eng.grammars.compile(GrammarSpec.search_replace({"calc.py": CALC}), max_tokens=len(ids) + 200)
    tight = eng.grammars.compile(GrammarSpec.search_replace({"calc.py": CALC}), max_tokens=len(ids) + 16)
    for c in (roomy, tight):
        assert all(c.accept(t) for t in ids)
    another = _tokens(eng, "\n\ncalc.py")
    assert roomy.valid_prefix(another) == len(another)  # room for another block
    assert tight.valid_prefix(another) < len(another)  # none: not begun
    assert tight.accept(sorted(eng.eos_token_ids)[0]) and tight.done


def test_bad_specs_are_refused(eng):
    for files in ({}, {"a.py": ""}, {"a.py": 3}):
        with pytest.raises(InvalidRequestError):
            spec = {"kind": "search_replace", "source": {"files": files}}
            eng.add_request("x", SamplingParams(grammar=spec))
