"""The official `openai` client against a real server: chat, streaming, completions, models, cache hits."""

from __future__ import annotations

TINY = "tiny"
HELLO = [{"role": "user", "content": "Write a haiku about paged attention."}]
EXACT = {"ignore_eos": True}  # extension: generate exactly max_tokens (random weights may emit EOS early)


def test_models_lists_the_served_model(openai_client):
    models = openai_client.models.list()
    assert [m.id for m in models.data] == [TINY]
    assert models.data[0].object == "model"


def test_chat_non_streaming(openai_client):
    r = openai_client.chat.completions.create(model=TINY, messages=HELLO, max_tokens=8, temperature=0,
                                              extra_body=EXACT)
    assert r.id.startswith("chatcmpl-") and r.object == "chat.completion" and r.model == TINY
    assert r.created > 0
    choice = r.choices[0]
    assert choice.index == 0 and choice.message.role == "assistant" and choice.finish_reason == "length"
    assert choice.message.content
    assert r.usage.completion_tokens == 8
    assert r.usage.prompt_tokens > 10
    assert r.usage.total_tokens == r.usage.prompt_tokens + 8
    cached = r.usage.prompt_tokens_details.cached_tokens
    assert isinstance(cached, int) and 0 <= cached < r.usage.prompt_tokens
    details = r.usage.completion_tokens_details
    assert details.accepted_prediction_tokens == 0 and details.rejected_prediction_tokens == 0
    metrics = r.model_extra["metrics"]
    assert metrics["ttft_ms"] > 0 and metrics["mean_itl_ms"] > 0
    assert metrics["decode_passes"] >= 1
    assert 0 < metrics["plain_passes"] <= metrics["decode_passes"] and metrics["plain_pass_ms"] > 0
    assert metrics["prefill_tokens_computed"] == r.usage.prompt_tokens - cached


def test_chat_streaming_with_usage_matches_non_streaming(openai_client):
    kwargs = dict(model=TINY, messages=HELLO, max_tokens=12, temperature=0, extra_body=EXACT)
    whole = openai_client.chat.completions.create(**kwargs).choices[0].message.content
    chunks = list(openai_client.chat.completions.create(**kwargs, stream=True,
                                                        stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["length"]
    last = chunks[-1]
    assert last.choices == [] and last.usage.completion_tokens == 12
    assert last.usage.prompt_tokens_details.cached_tokens >= 0
    assert last.model_extra["metrics"]["decode_passes"] >= 1
    assert all(c.usage is None for c in chunks[:-1])


def test_streaming_without_usage_sends_no_usage_chunk(openai_client):
    chunks = list(openai_client.chat.completions.create(model=TINY, messages=HELLO, max_tokens=4, stream=True,
                                                        temperature=0, extra_body=EXACT))
    assert all(c.choices for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "length"


def test_completions_text_and_token_prompts(openai_client):
    r = openai_client.completions.create(model=TINY, prompt="def fibonacci(n):", max_tokens=6, temperature=0,
                                         extra_body=EXACT)
    assert r.object == "text_completion" and r.id.startswith("cmpl-")
    assert r.choices[0].finish_reason == "length" and r.usage.completion_tokens == 6
    assert r.usage.prompt_tokens_details.cached_tokens >= 0
    ids = openai_client.completions.create(model=TINY, prompt=[1, 2, 3, 4, 5], max_tokens=3, temperature=0,
                                           extra_body=EXACT)
    assert ids.usage.prompt_tokens == 5 and ids.usage.completion_tokens == 3
    stream = list(openai_client.completions.create(model=TINY, prompt="def fibonacci(n):", max_tokens=6,
                                                   temperature=0, stream=True, extra_body=EXACT,
                                                   stream_options={"include_usage": True}))
    assert "".join(c.choices[0].text for c in stream if c.choices) == r.choices[0].text
    assert stream[-1].usage.completion_tokens == 6


def test_n_choices_and_batch_prompts(openai_client):
    r = openai_client.chat.completions.create(model=TINY, messages=HELLO, max_tokens=5, n=3, temperature=0.9,
                                              seed=7, extra_body=EXACT)
    assert [c.index for c in r.choices] == [0, 1, 2]
    assert r.usage.completion_tokens == 15
    batch = openai_client.completions.create(model=TINY, prompt=["one", "two"], max_tokens=4, temperature=0,
                                             extra_body=EXACT)
    assert len(batch.choices) == 2 and batch.usage.completion_tokens == 8


def test_stop_string_ends_with_stop(openai_client):
    whole = openai_client.completions.create(model=TINY, prompt="x = ", max_tokens=12, temperature=0,
                                             extra_body=EXACT).choices[0].text
    stop = whole[len(whole) // 2:][:3]
    if not stop.strip():
        stop = whole[-3:]
    r = openai_client.completions.create(model=TINY, prompt="x = ", max_tokens=12, temperature=0, stop=[stop],
                                         extra_body=EXACT)
    assert r.choices[0].finish_reason == "stop"
    assert stop not in r.choices[0].text and whole.startswith(r.choices[0].text)


def test_second_call_sharing_a_long_prefix_reports_cached_tokens(openai_client, http):
    context = "Repository context:\n" + "\n".join(f"line {i}: value = compute({i})" for i in range(60))
    first = openai_client.chat.completions.create(
        model=TINY, max_tokens=2, temperature=0,
        messages=[{"role": "system", "content": context}, {"role": "user", "content": "Fix bug one."}])
    second = openai_client.chat.completions.create(
        model=TINY, max_tokens=2, temperature=0,
        messages=[{"role": "system", "content": context}, {"role": "user", "content": "Now fix bug two."}])
    assert first.usage.prompt_tokens > 300
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert 0 < cached < second.usage.prompt_tokens
    assert cached >= 0.8 * first.usage.prompt_tokens - 32  # all full blocks of the shared prefix
    assert second.model_extra["metrics"]["prefill_tokens_computed"] == second.usage.prompt_tokens - cached


def test_a_correct_prediction_is_accepted_and_cache_salt_is_taken(openai_client):
    kwargs = dict(model=TINY, messages=HELLO, max_tokens=24, temperature=0, extra_body=EXACT)
    plain = openai_client.chat.completions.create(**kwargs)
    text = plain.choices[0].message.content
    predicted = openai_client.chat.completions.create(
        **{**kwargs, "extra_body": {**EXACT, "cache_salt": "tenant-a"}},
        prediction={"type": "content", "content": text})
    assert predicted.choices[0].message.content == text  # greedy output does not depend on the drafts
    details = predicted.usage.completion_tokens_details
    assert details.accepted_prediction_tokens > 0 and predicted.usage.completion_tokens == 24
    assert predicted.model_extra["metrics"]["decode_passes"] < plain.model_extra["metrics"]["decode_passes"]
    assert predicted.usage.prompt_tokens_details.cached_tokens == 0  # a new salt shares no cached blocks


def test_stop_as_a_string_seed_top_k_and_user(openai_client):
    kwargs = dict(model=TINY, prompt="x = ", max_tokens=12, temperature=0, extra_body=EXACT)
    whole = openai_client.completions.create(**kwargs).choices[0].text
    stop = next(whole[i:i + 2] for i in range(len(whole) // 2, len(whole) - 1) if whole[i:i + 2].strip())
    r = openai_client.completions.create(**kwargs, stop=stop)  # a bare string, not a list
    assert r.choices[0].finish_reason == "stop" and whole.startswith(r.choices[0].text)
    assert stop not in r.choices[0].text

    sampled = dict(model=TINY, messages=HELLO, max_tokens=10, temperature=1.0, seed=1234, user="alice",
                   extra_body={**EXACT, "top_k": 20})
    first = openai_client.chat.completions.create(**sampled).choices[0].message.content
    again = openai_client.chat.completions.create(**sampled).choices[0].message.content
    assert first == again  # same seed, same sample
