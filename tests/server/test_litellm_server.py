"""litellm against our real server (openai/ and hosted_vllm/ + api_base) and the normalized `complete`."""

from __future__ import annotations

import pytest

from deltaserve.harness.client import complete

MESSAGES = [{"role": "user", "content": "Explain prefix caching in one line."}]
CONTEXT = "Repository context:\n" + "\n".join(f"def f{i}(x): return x + {i}" for i in range(60))


@pytest.mark.parametrize("provider", ["openai", "hosted_vllm"])
def test_litellm_non_streaming_and_streaming(server, provider):
    import litellm

    base = server.url + "/v1"
    r = litellm.completion(model=f"{provider}/tiny", api_base=base, api_key="EMPTY", messages=MESSAGES,
                           max_tokens=6, temperature=0)
    assert r.choices[0].message.content
    assert r.usage.completion_tokens <= 6
    assert isinstance(r.usage.prompt_tokens_details.cached_tokens, int)
    chunks = list(litellm.completion(model=f"{provider}/tiny", api_base=base, api_key="EMPTY",
                                     messages=MESSAGES, max_tokens=6, temperature=0, stream=True,
                                     stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == r.choices[0].message.content
    usage = [c.usage for c in chunks if getattr(c, "usage", None)]
    assert usage and isinstance(usage[-1].prompt_tokens_details.cached_tokens, int)


@pytest.mark.parametrize("stream", [False, True])
def test_complete_normalizes_our_server(server, stream):
    base = server.url + "/v1"
    msgs = [{"role": "system", "content": CONTEXT}, {"role": "user", "content": "first"}]
    complete("openai/tiny", msgs, max_tokens=4, api_base=base, stream=stream)
    c = complete("openai/tiny", [msgs[0], {"role": "user", "content": "second"}], max_tokens=4, api_base=base,
                 stream=stream, ignore_eos=True)
    assert c.text and c.finish_reason == "length"
    assert c.completion_tokens == 4 and c.prompt_tokens > 300
    assert 0 < c.cached_tokens < c.prompt_tokens  # the shared system prompt came from the prefix cache
    assert c.ttft_s is not None and c.ttft_s > 0 and c.decode_s is not None and c.decode_s >= 0
    assert c.accepted_draft_tokens == 0 and c.rejected_draft_tokens == 0
    if not stream:  # our `metrics` extension survives litellm's non-streaming response
        assert c.decode_passes is not None and c.decode_passes >= 1
        assert c.metrics["prefill_tokens_computed"] == c.prompt_tokens - c.cached_tokens


def test_cache_salt_isolates_cached_prefixes(server):
    base = server.url + "/v1"
    msgs = [{"role": "system", "content": CONTEXT + "\n# salted"}, {"role": "user", "content": "go"}]
    complete("openai/tiny", msgs, max_tokens=1, api_base=base, cache_salt="alice")
    other = complete("openai/tiny", msgs, max_tokens=1, api_base=base, cache_salt="bob")
    same = complete("openai/tiny", msgs, max_tokens=1, api_base=base, cache_salt="alice")
    assert other.cached_tokens == 0
    assert same.cached_tokens > 0


def test_prediction_reaches_the_server(server):
    base = server.url + "/v1"
    plain = complete("openai/tiny", MESSAGES, max_tokens=20, api_base=base, ignore_eos=True)
    c = complete("openai/tiny", MESSAGES, max_tokens=20, api_base=base, prediction=plain.text,
                 ignore_eos=True)
    assert c.text == plain.text and c.completion_tokens == 20
    assert c.accepted_draft_tokens > 0  # the server drafted from the prediction and reported it back


def test_provider_without_our_extensions_reports_none():
    c = complete("openai/gpt-4o-mini", MESSAGES, max_tokens=5, mock_response="a canned reply")
    assert c.text == "a canned reply"
    assert c.decode_passes is None and c.metrics is None
    assert c.cached_tokens is None


@pytest.mark.parametrize("stream", [False, True])
def test_litellm_gets_a_required_call_written_under_the_tools_grammar(tool_server, stream):
    """An agent's own client (litellm) asking for a call: the random-weight model writes one by
    construction."""
    import json

    import litellm

    from tests.server.test_tool_calls import ALARM, ASK, THERMO, VALID

    r = litellm.completion(model="openai/tiny", api_base=tool_server.url + "/v1", api_key="EMPTY",
                           messages=ASK, tools=[THERMO, ALARM], tool_choice="required",
                           parallel_tool_calls=False, temperature=1.0, seed=11, max_tokens=40, stream=stream)
    if stream:
        r = litellm.stream_chunk_builder(list(r), messages=ASK)
    [call] = r.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) in VALID[call.function.name]
    assert r.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
def test_litellm_responses_api(server, stream):
    """litellm.responses (the Responses API through litellm's openai provider) gets the chat API's text for
    the same conversation, and its usage (16 tokens: litellm raises max_output_tokens to OpenAI's least)."""
    import litellm

    base = server.url + "/v1"
    chat = litellm.completion(model="openai/tiny", api_base=base, api_key="EMPTY", messages=MESSAGES,
                              max_tokens=16, temperature=0)
    r = litellm.responses(model="openai/tiny", api_base=base, api_key="EMPTY", input=MESSAGES,
                          max_output_tokens=16, temperature=0, stream=stream)
    if stream:
        events = list(r)
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        r = events[-1].response
    else:
        text = r.output[0].content[0].text
    assert text == r.output[0].content[0].text == chat.choices[0].message.content
    assert r.usage.input_tokens == chat.usage.prompt_tokens
    assert r.usage.output_tokens == chat.usage.completion_tokens


@pytest.mark.parametrize("stream", [False, True])
def test_the_harness_reads_cached_tokens_through_litellms_anthropic_provider(server, stream):
    """`complete` on litellm's anthropic/ provider (our /v1/messages): the shared system prompt of a second
    call is served from the prefix cache, and the harness sees it as cached tokens, as through openai/."""
    msgs = [{"role": "system", "content": CONTEXT + "\n# anthropic"}, {"role": "user", "content": "first"}]
    complete("anthropic/tiny", msgs, max_tokens=4, api_base=server.url, api_key="EMPTY", stream=stream)
    c = complete("anthropic/tiny", [msgs[0], {"role": "user", "content": "second"}], max_tokens=4,
                 api_base=server.url, api_key="EMPTY", stream=stream, temperature=0)
    assert c.text and c.completion_tokens <= 4 and c.prompt_tokens > 300
    assert 0 < c.cached_tokens < c.prompt_tokens


@pytest.mark.parametrize("stream", [False, True])
def test_litellm_anthropic_provider_gets_a_required_call(tool_server, stream):
    """An agent on litellm's anthropic/ provider: tool_choice "required" (Anthropic's "any") is written under
    the tools' grammar and comes back as an OpenAI-style tool call."""
    import json

    import litellm

    from tests.server.test_tool_calls import ALARM, ASK, THERMO, VALID

    r = litellm.completion(model="anthropic/tiny", api_base=tool_server.url, api_key="EMPTY", messages=ASK,
                           tools=[THERMO, ALARM], tool_choice="required", parallel_tool_calls=False,
                           temperature=1.0, max_tokens=40, stream=stream)
    if stream:
        r = litellm.stream_chunk_builder(list(r), messages=ASK)
    [call] = r.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) in VALID[call.function.name]
    assert r.choices[0].finish_reason == "tool_calls"
