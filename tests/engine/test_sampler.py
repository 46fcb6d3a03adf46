"""The sampler's math stays finite for every valid parameter, however extreme."""

from __future__ import annotations

import pytest
import torch

from deltaserve.engine.sampler import (
    MIN_TEMPERATURE,
    SamplingBatch,
    SamplingParams,
    position_generator,
    probabilities,
    sample,
    sample_batch,
)

EXTREMES = [
    {"temperature": 1e-300}, {"temperature": 1e-45}, {"temperature": 1e-39}, {"temperature": 3.27e-106},
    {"temperature": MIN_TEMPERATURE}, {"temperature": 2.0}, {"temperature": 1.0, "top_p": 1e-300},
    {"temperature": 1e-39, "top_p": 1e-45}, {"temperature": 0.7, "top_p": 1e-45, "top_k": 3},
    {"temperature": MIN_TEMPERATURE, "top_p": 0.5},
]


@pytest.mark.parametrize("kwargs", EXTREMES, ids=[str(k) for k in EXTREMES])
def test_extreme_parameters_give_a_distribution_and_a_token(kwargs):
    torch.manual_seed(0)
    logits = torch.randn(512) * 30  # wide logits: large gaps are what overflow a tiny temperature
    params = SamplingParams(**kwargs)
    probs = probabilities(logits, params)
    assert torch.isfinite(probs).all() and abs(float(probs.sum()) - 1.0) < 1e-4
    gen = torch.Generator().manual_seed(1)
    assert 0 <= sample(logits, params, gen) < 512


def test_below_min_temperature_is_greedy_and_tiny_top_p_keeps_the_top_token():
    logits = torch.tensor([0.1, 3.0, 2.9, -1.0])
    assert SamplingParams(temperature=1e-300).greedy
    assert not SamplingParams(temperature=MIN_TEMPERATURE).greedy
    assert sample(logits, SamplingParams(temperature=1e-45), None) == 1
    probs = probabilities(logits, SamplingParams(temperature=1.0, top_p=1e-300))
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_non_finite_parameters_are_refused():
    for bad in ({"temperature": float("inf")}, {"temperature": float("nan")}, {"top_p": float("nan")}):
        with pytest.raises(ValueError):
            SamplingParams(**bad)


def _row_params():
    return [SamplingParams(temperature=0.0), SamplingParams(temperature=0.9, top_k=3),
            SamplingParams(temperature=1.3, top_p=0.5),
            SamplingParams(temperature=0.7, top_k=2**70, top_p=0.9),  # any top_k beyond the vocabulary
            SamplingParams(top_k=1, temperature=2.0)]


def test_a_batch_samples_each_row_as_it_would_alone():
    """Per-row parameters and generators: a row's token does not depend on what it is batched with."""
    logits = torch.randn(5, 300, generator=torch.Generator().manual_seed(3)) * 4
    params = _row_params()
    gens = lambda: [position_generator(7, i, torch.device("cpu")) for i in range(5)]  # noqa: E731
    batched = sample_batch(logits, SamplingBatch(params, gens(), torch.device("cpu"))).tolist()
    alone = [sample(logits[i], p, g) for i, (p, g) in enumerate(zip(params, gens(), strict=True))]
    assert batched == alone
    assert batched[0] == int(logits[0].argmax()) and batched[4] == int(logits[4].argmax())  # greedy, top-1


def test_sampled_rows_stay_inside_their_own_filters():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(4)) * 3
    params = [SamplingParams(temperature=5.0, top_k=2), SamplingParams(temperature=5.0, top_p=0.3),
              SamplingParams(temperature=5.0)]
    seen: list[set[int]] = [set(), set(), set()]
    for draw in range(300):
        gens = [position_generator(draw, 0, torch.device("cpu")) for _ in params]
        for row, tok in enumerate(sample_batch(logits, SamplingBatch(params, gens, torch.device("cpu")))):
            seen[row].add(int(tok))
    assert seen[0] == set(logits[0].topk(2).indices.tolist())
    kept = probabilities(logits[1], params[1]) > 0
    assert seen[1] <= set(kept.nonzero().flatten().tolist()) and len(seen[1]) < 50
    assert len(seen[2]) > 10  # unfiltered, hot: many tokens


def test_a_position_draws_the_same_whatever_came_before():
    a = torch.rand(1000, generator=position_generator(5, 12, torch.device("cpu")))
    b = torch.rand(1000, generator=position_generator(5, 12, torch.device("cpu")))
    c = torch.rand(1000, generator=position_generator(5, 13, torch.device("cpu")))
    assert torch.equal(a, b) and not torch.equal(a, c)
