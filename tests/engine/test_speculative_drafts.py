"""Draft proposal (prompt lookup, prediction cursor) and the acceptance rule, without a model."""

from __future__ import annotations

import torch

from deltaserve.engine.sampler import SamplingParams, sample
from deltaserve.engine.sequence import Sequence
from deltaserve.engine.speculative import SpeculativeDrafter, _NgramIndex, _Prediction, accept_draft


def test_ngram_index_finds_latest_earlier_occurrence_longest_n_first():
    toks = [1, 2, 3, 7, 7, 9, 2, 3, 8, 8, 1, 2, 3]
    ix = _NgramIndex(2, 3)
    ix.update(toks)
    # "1 2 3" (n=3) occurred at the start only; "2 3" (n=2) later too, but the longer match wins
    assert ix.lookup(toks, 4) == [7, 7, 9, 2]
    toks2 = toks + [5, 2, 3]  # no "5 2 3" before, so n=2: latest "2 3" is the one ending at index 13
    ix.update(toks2)
    assert ix.lookup(toks2, 3) == [5, 2, 3]
    loop = [4, 1, 2, 1, 2]
    ix = _NgramIndex(2, 2)
    ix.update(loop)
    assert ix.lookup(loop, 5) == [1, 2, 1, 2, 1]  # a match running into the tail repeats the loop


def test_ngram_index_is_incremental_and_never_matches_the_tail_itself():
    ix = _NgramIndex(2, 2)
    toks = [4, 5]
    ix.update(toks)
    assert ix.lookup(toks, 3) == []  # the only "4 5" is the tail
    toks += [6, 4, 5]
    ix.update(toks)
    assert ix.lookup(toks, 3) == [6, 4, 5]
    assert ix.lookup([9, 9], 3) == []


def test_prediction_follows_the_output_and_resyncs_after_edits():
    pred = list(range(100, 140))
    p = _Prediction.build(pred, 2, 3, mark=5)
    toks = [0, 1, 2, 3, 4, 100]  # prompt of 5, first output token matches the prediction's first
    assert p.propose(toks, 2, 3, 4) == [101, 102, 103, 104]
    toks += [101, 102, 55]  # two drafts accepted, then the model wrote its own token (an insertion)
    assert p.propose(toks, 2, 3, 4) == []  # out of sync and "102 55" is nowhere in the prediction
    toks += [103]  # the model came back to the prediction where it left it
    assert p.propose(toks, 2, 3, 4) == [104, 105, 106, 107]
    toks += [104, 105, 120, 121]  # a deletion: jumped ahead, resync on "120 121"
    assert p.propose(toks, 2, 3, 3) == [122, 123, 124]


def test_prediction_resync_prefers_the_next_occurrence_after_the_cursor():
    line = [7, 8, 9]
    pred = line + [1] + line + [2] + line + [3]
    p = _Prediction.build(pred, 2, 2, mark=0)
    toks = line + [1] + [7]  # in sync up to the 5th predicted token
    assert p.propose(toks, 2, 2, 2) == [8, 9]
    toks += [8, 9, 5, 7, 8]  # diverged ("9 5"), then "7 8" again: the one after the cursor, not the first
    assert p.propose(toks, 2, 2, 2) == [9, 3]


def _seq(prompt, **params):
    return Sequence("r", prompt, SamplingParams(**params), None, None)


def test_drafter_caps_drafts_by_max_tokens_and_forced_tokens():
    d = SpeculativeDrafter(None, num_speculative_tokens=8, n_min=2, n_max=3)
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2]
    seq = _seq(prompt, max_tokens=100)
    seq.token_ids.append(3)
    assert d.propose(seq) == [4, 5, 6, 7, 8, 9, 10, 11]
    seq = _seq(prompt, max_tokens=4)
    seq.token_ids.append(3)
    assert d.propose(seq) == [4, 5]  # 1 emitted, 3 left: 2 drafts + the model's own token
    seq = _seq(prompt, forced_token_ids=[3, 4, 5, 6])
    seq.token_ids.append(3)
    assert d.propose(seq) == [4, 5]


def test_prediction_is_preferred_and_context_is_the_fallback():
    class Tok:  # the drafter only needs encode(); a real tokenizer is exercised in the engine tests
        def encode(self, text, add_special_tokens=False):
            return [int(x) for x in text.split()]

    d = SpeculativeDrafter(Tok(), num_speculative_tokens=3, n_min=2, n_max=2)
    seq = _seq([50, 51, 52, 53, 50, 51], prediction="60 61 62 63 64")
    seq.token_ids.append(60)
    assert d.propose(seq) == [61, 62, 63]
    seq.token_ids += [99, 50, 51]  # left the prediction; "50 51" is in the context, latest at 4..6
    assert d.propose(seq) == [60, 99, 50]


def _empirical(draw, n=20000, vocab=4):
    counts = torch.zeros(vocab)
    for _ in range(n):
        counts[draw()] += 1
    return counts / n


def test_acceptance_rule_keeps_the_target_distribution():
    """Sample-then-compare (the engine) and textbook speculative sampling with a one-hot draft both emit
    exactly p; the draft is kept with probability p(draft)."""
    p = torch.tensor([0.5, 0.3, 0.15, 0.05])
    logits = p.log()
    params = SamplingParams(temperature=1.0, seed=0)
    draft = 1
    gen = torch.Generator().manual_seed(0)
    engine_rule = _empirical(lambda: sample(logits, params, gen))  # emitted token (draft kept iff equal)
    gen2 = torch.Generator().manual_seed(1)
    textbook = _empirical(lambda: accept_draft(p, draft, gen2))
    assert torch.allclose(engine_rule, p, atol=0.015), engine_rule
    assert torch.allclose(textbook, p, atol=0.015), textbook
    assert abs(float(engine_rule[draft]) - 0.3) < 0.015  # acceptance rate = p(draft)


def test_textbook_rule_never_emits_the_draft_after_rejecting_it():
    p = torch.tensor([0.0, 1.0, 0.0, 0.0])
    assert accept_draft(p, 1) == 1
    q = torch.tensor([0.0, 0.0, 1.0, 0.0])
    assert all(accept_draft(q, 1) == 2 for _ in range(20))
