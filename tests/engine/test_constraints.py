"""Constrained decoding in the engine (tiny random-weight model): whatever the weights prefer, the output
matches its grammar; drafts (the drafter's, a prediction's, the grammar's own forced text) are verified
against the mask and never let a disallowed token through; the prefix cache is untouched by constraints; a
mask row per draft leaves the matcher as it was."""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.constraints import GrammarSpec, fill_span_masks, unpack_bitmask, words_per_row
from deltaserve.errors import InvalidRequestError

PROMPT = "The answer is"
REGEXES = [r"[0-9]{3}-[a-c]{2}", r"(alpha|beta|gamma) (one|two)", r"x{5,9}", r'"[a-z ]{2,12}"',
           r"[a-f ]{1,20}\."]


@pytest.fixture(scope="module")
def eng(tiny_llama):
    return Engine.from_pretrained(str(tiny_llama), dtype="float32", num_blocks=256, speculative="ngram",
                                  draft_token_cost=0.05)


@given(pattern=st.sampled_from(REGEXES), seed=st.integers(0, 2**31),
       temperature=st.sampled_from([0.0, 0.9, 1.5]))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_the_output_always_matches_its_regex(eng, pattern, seed, temperature):
    out = eng.generate(PROMPT, SamplingParams(max_tokens=48, temperature=temperature, seed=seed,
                                              grammar=GrammarSpec(kind="regex", source=pattern)))[0]
    assert out.finish_reason == "stop" and re.fullmatch(pattern, out.text), (out.finish_reason, out.text)


def test_drafts_that_break_the_grammar_are_cut_and_forced_text_is_drafted(eng):
    # the prediction drafts text the grammar refuses; the grammar forces a long fixed run
    pattern = r"BEGIN-[0-9]{2}-CONSTANT-TAIL-OF-TEXT"
    out = eng.generate(PROMPT, SamplingParams(max_tokens=64, prediction="hello world, hello world",
                                              grammar=GrammarSpec(kind="regex", source=pattern)))[0]
    assert re.fullmatch(pattern, out.text), out.text
    grammar_drafts = out.metrics.drafts["grammar"]
    assert grammar_drafts.accepted > 0
    assert out.metrics.decode_passes < out.metrics.completion_tokens  # forced runs verified in one pass


def test_the_prefix_cache_serves_constrained_requests_alike(make_engine):
    eng = make_engine(enable_prefix_caching=True)
    prompt = list(range(5, 5 + 64))
    grammar = GrammarSpec(kind="regex", source="[a-z]{4}")
    first = eng.generate([prompt], SamplingParams(max_tokens=8, grammar=grammar))[0]
    plain = eng.generate([prompt], SamplingParams(max_tokens=8))[0]
    again = eng.generate([prompt], SamplingParams(max_tokens=8, grammar=grammar))[0]
    assert first.metrics.cached_tokens == 0
    assert plain.metrics.cached_tokens == again.metrics.cached_tokens > 0
    assert again.text == first.text


def test_span_masks_follow_the_drafts_and_leave_the_matcher_as_it_was(eng):
    constraint = eng.grammars.compile(GrammarSpec(kind="regex", source="abc[0-9]"))
    drafts = eng.tokenizer.encode("abc", add_special_tokens=False)
    words = words_per_row(eng.model.vocab_size)
    rows = torch.full((len(drafts) + 1, words), -1, dtype=torch.int32)
    fill_span_masks(constraint, drafts, rows)
    allowed = unpack_bitmask(rows, eng.model.vocab_size)
    for j, token in enumerate(drafts):
        assert allowed[j, token] and allowed[j].sum() < eng.model.vocab_size
    digits = [eng.tokenizer.convert_tokens_to_ids(d) for d in "0123456789"]
    assert all(allowed[-1, d] for d in digits)
    again = torch.full_like(rows[:1], -1)
    constraint.fill_mask(again[0])
    assert torch.equal(again[0], rows[0])  # rolled back to where it started


def test_unpacking_puts_bit_i_of_word_w_at_token_32w_plus_i():
    words = torch.tensor([[1 << 3, 0, -(2**31)], [0, 1, 0]], dtype=torch.int32)
    allowed = unpack_bitmask(words, 70)
    assert allowed[0].nonzero().flatten().tolist() == [3]  # bit 31 of word 2 is token 95: past the vocab
    assert allowed[1].nonzero().flatten().tolist() == [32]


def test_bad_grammars_and_forced_tokens_are_refused_up_front(eng):
    with pytest.raises(InvalidRequestError, match="regex"):
        eng.add_request(PROMPT, SamplingParams(grammar=GrammarSpec(kind="regex", source="(open")))
    with pytest.raises(InvalidRequestError, match="combined"):
        grammar = GrammarSpec(kind="regex", source="a")
        eng.add_request(PROMPT, SamplingParams(forced_token_ids=[5], grammar=grammar))
    assert not eng.has_unfinished()
