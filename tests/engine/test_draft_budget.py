"""Draft budgets: a draft row's measured cost, a request's running acceptance rate, and how far drafts go
(engine/draft_budget.py), alone, in the drafter, and through a real engine."""

from __future__ import annotations

import pytest

from deltaserve.engine import SamplingParams
from deltaserve.engine.draft_budget import PRIOR_SHARE, AcceptanceRate, DraftCost, worth
from deltaserve.engine.outputs import add_drafts
from deltaserve.engine.sequence import Sequence
from deltaserve.engine.speculative import SpeculativeDrafter
from tests.engine.test_speculative import assert_counters_add_up, copy_model, copy_prompts  # noqa: F401


def test_worth_is_the_last_token_whose_chance_covers_its_cost():
    # 0.5^4 >= 0.05 > 0.5^5; a sure rate drafts the cap; a rate below the cost drafts nothing
    assert [worth(r, 0.05, 32) for r in (0.5, 0.9, 1.0, 0.04, 0.0)] == [4, 28, 32, 0, 0]
    assert worth(0.9, 0.5, 8) == 6 and worth(0.6, 0.5, 8) == 1  # a compute-bound pass: short drafts


def test_cost_is_learned_from_plain_and_verify_passes():
    cost = DraftCost()
    assert cost.share == PRIOR_SHARE
    cost.observe(9, 0.5)  # a verify pass before any plain one: nothing to compare it with
    assert cost.share == PRIOR_SHARE
    cost.observe(1, 0.1)
    cost.observe(9, 0.5)  # 8 more rows took 0.4 s: 0.05 s a row, half a plain pass
    assert cost.share == pytest.approx(0.5)
    for _ in range(40):  # the machine changes (say the other core got busy): the estimate follows
        cost.observe(1, 0.2)
        cost.observe(5, 0.24)
    assert cost.share == pytest.approx(0.05, rel=0.05)
    assert DraftCost(pinned=0.3).share == 0.3


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
    assert cost.plain_s > 0 and cost.row_s is not None and 0 < cost.share < 1
    pinned = make_engine(copy_model, speculative="ngram", draft_token_cost=0.2)
    assert pinned.drafter.cost.share == 0.2
