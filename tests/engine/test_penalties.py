"""Presence and frequency penalties in the batched sampler: OpenAI's formula per row on the device, after a
grammar's mask (a disallowed token stays impossible), before temperature, greedy rows included."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from deltaserve.engine import SamplingParams
from deltaserve.engine.constraints.masks import words_per_row
from deltaserve.engine.sampler import Penalties, SamplingBatch, sample_batch
from deltaserve.testing.tiny_model import make_tiny_model_dir

CPU = torch.device("cpu")


def reference(logits: torch.Tensor, params: list[SamplingParams], counted: list[list[int]]) -> torch.Tensor:
    out = logits.clone()
    for row, (p, tokens) in enumerate(zip(params, counted, strict=True)):
        for tok, n in Counter(tokens).items():
            out[row, tok] -= p.presence_penalty + p.frequency_penalty * n
    return out


def test_penalties_follow_openai_formula_per_row():
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(0))
    params = [SamplingParams(presence_penalty=0.5, frequency_penalty=1.5), SamplingParams(),
              SamplingParams(frequency_penalty=-2.0), SamplingParams(presence_penalty=2.0)]
    counted = [[3, 3, 7, 49], [1, 2, 3], [0, 0, 0], []]
    penalties = Penalties.of(params, counted, CPU)
    assert torch.allclose(penalties.apply(logits), reference(logits, params, counted))


def test_nothing_to_count_or_no_penalised_row_costs_nothing():
    assert Penalties.of([SamplingParams()], [[1, 2]], CPU) is None
    assert Penalties.of([SamplingParams(presence_penalty=1.0)], [[]], CPU) is None
    assert Penalties.of([SamplingParams(presence_penalty=1.0)], None, CPU) is None


def test_greedy_rows_are_penalised_and_a_masked_token_stays_impossible():
    logits = torch.tensor([[0.0, 5.0, 4.0, 1.0]])
    greedy = SamplingParams(frequency_penalty=2.0)
    assert sample_batch(logits, SamplingBatch([greedy], [None], CPU, counted=[[1, 1]])).tolist() == [2]
    logits = torch.tensor([[0.0, 5.0, 4.0, 9.0]])
    # token 3 is masked out; a negative penalty on it must not bring it back
    masks = torch.zeros(1, words_per_row(4), dtype=torch.int32)
    masks[0, 0] = 0b0111
    boost = SamplingParams(presence_penalty=-2.0, frequency_penalty=-2.0)
    batch = SamplingBatch([boost], [None], CPU, masks, counted=[[3] * 50 + [0]])
    assert sample_batch(logits, batch).tolist() == [1]


def _max_repeats(tokens: list[int]) -> int:
    return max(Counter(tokens).values())


@pytest.fixture(scope="module")
def small_vocab(tmp_path_factory):
    """A tiny llama over 256 tokens: its greedy output falls into loops."""
    return make_tiny_model_dir(tmp_path_factory.mktemp("penalties") / "llama256", "llama", vocab_size=256)


@pytest.mark.parametrize("speculative", [False, True], ids=["plain", "speculative"])
def test_a_large_frequency_penalty_stops_repetition(make_engine, small_vocab, speculative):
    eng = make_engine(small_vocab, speculative=speculative)
    prompt = [11, 12, 13, 14] * 6
    plain = eng.generate(prompt, SamplingParams(max_tokens=40, ignore_eos=True))[0].token_ids
    penalised = eng.generate(prompt, SamplingParams(max_tokens=40, ignore_eos=True,
                                                    frequency_penalty=2.0, presence_penalty=2.0))[0].token_ids
    assert penalised != plain
    assert _max_repeats(plain) > 3 and _max_repeats(penalised) <= 2, (plain, penalised)
