"""Draft budgets: a draft row's measured cost, a request's running acceptance rate, and how far drafts go
(engine/draft_budget.py), alone, in the drafter, and through a real engine."""

from __future__ import annotations

import pytest

from deltaserve.engine import SamplingParams
from deltaserve.engine.draft_budget import PRIOR_SHARE, AcceptanceRate, DraftCost, best_drafts
from deltaserve.engine.outputs import add_drafts
from deltaserve.engine.sequence import Sequence
from deltaserve.engine.speculative import SpeculativeDrafter
from tests.engine.test_speculative import assert_counters_add_up, copy_model, copy_prompts  # noqa: F401


def test_drafts_go_as_far_as_tokens_per_second_grow():
    linear = DraftCost(pinned=0.05).pass_time  # a memory-bound pass: a row is 5% of a plain pass
    assert [best_drafts(r, linear, 32) for r in (0.9, 1.0, 0.3, 0.04, 0.0)] == [13, 32, 2, 0, 0]
    compute_bound = DraftCost(pinned=0.5).pass_time
    assert best_drafts(0.9, compute_bound, 8) == 3 and best_drafts(0.6, compute_bound, 8) == 1
    assert best_drafts(0.4, compute_bound, 8) == 0  # 1.4 tokens for 1.5 passes: plain decode is faster


def test_a_fixed_verify_cost_turns_drafting_off_where_it_does_not_pay():
    """The issue's Xeon: a verify pass ~2x a plain one whatever its width. With 40% acceptance a draft
    never pays there (the old per-row share, 1/8 of a pass, drafted 2 tokens: 1.5 tokens in 2 passes)."""
    cost = DraftCost()
    for _ in range(5):
        cost.observe(1, 0.117)
        cost.observe(9, 0.240)
        cost.observe(2, 0.230)
    assert cost.pass_time(2) == pytest.approx(0.230 / 0.117, rel=0.01)
    assert 0.230 / 0.117 < cost.pass_time(5) < 0.240 / 0.117  # between seen widths: on their line
    assert cost.best_drafts(0.4, 8) == 0
    assert cost.best_drafts(0.95, 8) == 8  # copying a file: 6.6 tokens in ~2 passes


def test_pass_times_are_learned_from_plain_and_verify_passes():
    cost = DraftCost()
    assert cost.pass_time(9) == pytest.approx(1 + 8 * PRIOR_SHARE)  # nothing timed yet
    cost.observe(9, 0.5)  # a verify pass before any plain one: nothing to compare it with
    assert cost.pass_time(9) == pytest.approx(1 + 8 * PRIOR_SHARE)
    cost.observe(1, 0.1)
    assert cost.pass_time(9) == pytest.approx(5.0) and cost.pass_time(5) == pytest.approx(3.0)
    assert cost.pass_time(17) == pytest.approx(9.0)  # beyond the widest seen: the same slope
    for _ in range(40):  # the machine changes (say the other core got busy): the estimate follows
        cost.observe(1, 0.2)
        cost.observe(9, 0.24)
    assert cost.pass_time(9) == pytest.approx(1.2, rel=0.05)
    assert DraftCost(pinned=0.3).pass_time(3) == pytest.approx(1.6)


def _seq(tokens):
    return Sequence("r", tokens, SamplingParams(max_tokens=100), None, None)


def test_rate_falls_with_rejections_and_rises_with_acceptances():
    seq, rate = _seq([1, 2, 3]), AcceptanceRate()
    assert rate.update(seq, "ngram") == 1.0
    for _ in range(5):  # five passes, each verifying 8 drafts of which none was taken
        add_drafts(seq.metrics.drafts, "ngram", 8, 0)
        low = rate.update(seq, "ngram")
    assert low == pytest.approx(0.7 ** 5)
    assert rate.update(seq, "ngram") == low  # no new drafts: nothing learned
    add_drafts(seq.metrics.drafts, "ngram", 4, 4)  # all four taken: no rejection to count
    assert rate.update(seq, "ngram") == pytest.approx(low + 0.3 * (1 - low))
    add_drafts(seq.metrics.drafts, "ngram", 4, 3)  # three taken, then one rejected: 3 of 4 trials
    before = rate.rate
    assert rate.update(seq, "ngram") == pytest.approx(before + 0.3 * (0.75 - before))


class _Tokenizer:
    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


def test_ngram_drafts_shrink_then_stop_where_they_keep_failing():
    drafter = SpeculativeDrafter(_Tokenizer(), 8, 2, 4, "ngram", cost=DraftCost(pinned=0.5))
    seq = _seq([5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 5, 6])
    assert drafter.propose(seq) == [7, 8, 9, 10, 11, 12, 13, 14]  # no history yet: the full draft
    lengths = []
    for i in range(4):  # each draft rejected at its first token
        add_drafts(seq.metrics.drafts, "ngram", 8, 0)
        seq.token_ids += [90 + i, 5, 6]  # the text goes elsewhere, then a 2-gram comes back
        lengths.append(len(drafter.propose(seq)))
    assert lengths == [1, 0, 0, 0]  # 0.7: one token is worth half a pass; 0.49: none
    seq.token_ids += [7, 8, 9]  # a 4-gram match (prompt_lookup_max): a 2-token probe all the same
    assert drafter.propose(seq) == [10, 11]


def test_prediction_keeps_probing_with_one_token():
    drafter = SpeculativeDrafter(_Tokenizer(), 8, 2, 4, "off", cost=DraftCost(pinned=0.9))
    seq = Sequence("r", [1, 2], SamplingParams(max_tokens=100, prediction="abcdefghij", speculative="ngram"),
                   None, None)
    for _ in range(3):
        add_drafts(seq.metrics.drafts, "prediction", 8, 0)
    assert drafter.propose(seq) == [ord("a")]


def test_engine_learns_its_cost_and_greedy_output_is_unchanged(make_engine, copy_model):  # noqa: F811
    off = make_engine(copy_model, speculative="off")
    prompts = copy_prompts(off, 6, seed=3)
    params = SamplingParams(max_tokens=40, ignore_eos=True)
    ref = [off.generate(p, params)[0].token_ids for p in prompts]
    on = make_engine(copy_model, speculative="ngram", draft_token_cost=None)  # measured
    outs = [on.generate(p, params)[0] for p in prompts]  # one at a time: batch-1 passes are timed
    assert [o.token_ids for o in outs] == ref
    assert_counters_add_up(outs)
    cost = on.drafter.cost
    assert cost.seconds[1] > 0 and len(cost.seconds) > 1  # plain passes and verify passes were timed
    pinned = make_engine(copy_model, speculative="ngram", draft_token_cost=0.2)
    assert pinned.drafter.cost.pass_time(2) == pytest.approx(1.2)
