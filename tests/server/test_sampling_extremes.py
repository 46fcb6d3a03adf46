"""Tiny but valid temperature / top_p values sample a token over HTTP; they once made the sampler's softmax
inf/NaN and the request a 500 (a stream ended in an error event)."""

from __future__ import annotations

import pytest

TINY = "tiny"
TINY_SAMPLING = [
    ("temperature_1e-300", {"temperature": 1e-300}),
    ("temperature_1e-45", {"temperature": 1e-45}),
    ("temperature_1e-39", {"temperature": 1e-39}),
    ("temperature_3.27e-106", {"temperature": 3.27e-106}),
    ("top_p_1e-300", {"top_p": 1e-300}),
    ("top_p_1e-45_temperature_1e-39", {"top_p": 1e-45, "temperature": 1e-39}),
]


@pytest.mark.parametrize("name,sampling", TINY_SAMPLING, ids=[c[0] for c in TINY_SAMPLING])
def test_tiny_temperature_or_top_p_samples_a_token(openai_client, name, sampling):
    """Plain and streamed, over the openai client; a tiny temperature answers as greedy decoding does."""
    messages = [{"role": "user", "content": "count: one two three"}]
    kwargs = {"model": TINY, "messages": messages, "max_tokens": 6, "extra_body": {"ignore_eos": True}}
    greedy = openai_client.chat.completions.create(temperature=0, **kwargs)
    plain = openai_client.chat.completions.create(seed=1, **sampling, **kwargs)
    assert plain.choices[0].finish_reason == "length" and plain.usage.completion_tokens == 6
    if "temperature" in sampling:
        assert plain.choices[0].message.content == greedy.choices[0].message.content
    stream = openai_client.chat.completions.create(seed=1, stream=True, **sampling, **kwargs)
    chunks = list(stream)
    assert chunks[-1].choices[0].finish_reason == "length"
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == plain.choices[0].message.content
