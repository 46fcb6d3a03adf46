"""Logprobs from the batched sampler: the model's own log-softmax (after a grammar's mask, before penalties
and temperature), packed with the tokens on the device and unpacked per row; one per output token on the
engine's outputs, streamed per step."""

from __future__ import annotations

import pytest
import torch

from deltaserve.engine import SamplingParams
from deltaserve.engine.constraints.masks import words_per_row
from deltaserve.engine.errors import InvalidRequestError
from deltaserve.engine.sampler import SamplingBatch, sample_rows

CPU = torch.device("cpu")
PROMPT = [11, 12, 13, 14, 15] * 3


def _unpacked(logits, params, masks=None):
    batch = SamplingBatch(params, [None] * len(params), CPU, masks)
    return batch.unpack(sample_rows(logits, batch).tolist())


def test_rows_get_their_own_count_of_top_logprobs_and_the_rest_none():
    logits = torch.randn(3, 300, generator=torch.Generator().manual_seed(0)) * 3
    params = [SamplingParams(logprobs=5), SamplingParams(), SamplingParams(logprobs=0)]
    tokens, logprobs = _unpacked(logits, params)
    assert tokens == logits.argmax(-1).tolist() and logprobs[1] is None
    reference = logits.log_softmax(-1)
    for row, k in ((0, 5), (2, 0)):
        lp = logprobs[row]
        assert lp.token_id == tokens[row] and lp.logprob == pytest.approx(float(reference[row, tokens[row]]))
        top = reference[row].topk(k)
        assert [t for t, _ in lp.top] == top.indices.tolist()
        assert [v for _, v in lp.top] == pytest.approx(top.values.tolist())


def test_no_row_wanting_logprobs_brings_back_the_tokens_alone():
    logits = torch.randn(2, 50)
    batch = SamplingBatch([SamplingParams(), SamplingParams()], [None, None], CPU)
    assert sample_rows(logits, batch).dtype == torch.long
    assert batch.unpack(sample_rows(logits, batch).tolist()).logprobs is None


def test_logprobs_see_the_mask_not_the_penalties():
    logits = torch.tensor([[0.0, 5.0, 4.0, 9.0]])
    masks = torch.zeros(1, words_per_row(4), dtype=torch.int32)
    masks[0, 0] = 0b0111  # token 3 disallowed
    tokens, (lp,) = _unpacked(logits, [SamplingParams(logprobs=4)], masks)
    assert tokens == [1] and lp.top[-1] == (3, float("-inf"))
    reference = logits[0, :3].log_softmax(-1)
    assert [v for _, v in lp.top[:3]] == pytest.approx(sorted(reference.tolist(), reverse=True))


def test_engine_outputs_carry_one_logprob_per_token_streamed_and_whole(make_engine):
    eng = make_engine()
    params = SamplingParams(max_tokens=12, ignore_eos=True, logprobs=3)
    streamed = []
    for out in eng.stream(PROMPT, params):
        assert len(out.new_logprobs) == len(out.new_token_ids)
        streamed += out.new_logprobs
    assert out.logprobs == streamed and [lp.token_id for lp in streamed] == out.token_ids
    for lp in streamed:  # greedy: the token is the most likely one
        assert lp.logprob <= 0 and lp.top[0] == (lp.token_id, pytest.approx(lp.logprob))
        assert [v for _, v in lp.top] == sorted((v for _, v in lp.top), reverse=True)
    assert eng.generate(PROMPT, SamplingParams(max_tokens=3))[0].logprobs is None


def test_logprobs_are_the_models_own_not_tempered_or_penalised(make_engine):
    eng = make_engine()
    greedy = eng.generate(PROMPT, SamplingParams(max_tokens=1, logprobs=5))[0].logprobs[0]
    hot = eng.generate(PROMPT, SamplingParams(max_tokens=1, logprobs=5, temperature=1.9, seed=3))[0]
    assert hot.logprobs[0].top == [(t, pytest.approx(v, abs=1e-5)) for t, v in greedy.top]
    penalised = eng.generate(PROMPT, SamplingParams(max_tokens=24, ignore_eos=True, logprobs=1,
                                                    presence_penalty=-2, frequency_penalty=-2))[0]
    # rewarded repetition picks tokens the model itself does not rank first
    assert any(lp.top[0][0] != lp.token_id for lp in penalised.logprobs)


def test_forced_tokens_and_logprobs_cannot_be_combined(make_engine):
    with pytest.raises(InvalidRequestError):
        make_engine().add_request(PROMPT, SamplingParams(forced_token_ids=[5], logprobs=1))
