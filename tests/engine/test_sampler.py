"""The sampler's math stays finite for every valid parameter, however extreme."""

from __future__ import annotations

import pytest
import torch

from deltaserve.engine.sampler import MIN_TEMPERATURE, SamplingParams, probabilities, sample

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
