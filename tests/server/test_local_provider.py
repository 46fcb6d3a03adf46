"""`local/<model>`: our engine in-process as a litellm CustomLLM, matching the server's greedy output."""

from __future__ import annotations

import argparse
import asyncio

import litellm
import pytest

from deltaserve.harness.client import complete, local_engine, register_local_engine

MESSAGES = [{"role": "user", "content": "Name three sorting algorithms."}]
CONTEXT = "Repository context:\n" + "\n".join(f"def g{i}(x): return x * {i}" for i in range(60))


@pytest.fixture(scope="module")
def local_tiny(tiny_llama):
    from deltaserve.engine import Engine

    register_local_engine("tiny", Engine.from_pretrained(str(tiny_llama), dtype="float32", device="cpu",
                                                  num_blocks=1024))
    return "local/tiny"


def test_local_gives_the_same_greedy_text_as_the_server(server, local_tiny):
    via_server = complete("openai/tiny", MESSAGES, max_tokens=16, api_base=server.url + "/v1",
                          ignore_eos=True)
    in_process = complete(local_tiny, MESSAGES, max_tokens=16, ignore_eos=True)
    assert in_process.text == via_server.text
    assert in_process.completion_tokens == via_server.completion_tokens == 16
    assert in_process.prompt_tokens == via_server.prompt_tokens


def test_local_usage_and_metrics(local_tiny):
    msgs = [{"role": "system", "content": CONTEXT}, {"role": "user", "content": "one"}]
    first = complete(local_tiny, msgs, max_tokens=3)
    second = complete(local_tiny, [msgs[0], {"role": "user", "content": "two"}], max_tokens=3,
                      ignore_eos=True)
    assert first.prompt_tokens > 300
    assert 0 < second.cached_tokens < second.prompt_tokens
    assert second.completion_tokens == 3 and second.finish_reason == "length"
    assert second.decode_passes >= 1 and second.ttft_s > 0
    assert second.metrics["prefill_tokens_computed"] == second.prompt_tokens - second.cached_tokens
    assert local_engine("tiny").stats().blocks_in_use == 0


def test_local_streaming_matches_non_streaming(local_tiny):
    whole = complete(local_tiny, MESSAGES, max_tokens=10, ignore_eos=True)
    streamed = complete(local_tiny, MESSAGES, max_tokens=10, ignore_eos=True, stream=True)
    assert streamed.text == whole.text
    assert streamed.completion_tokens == 10 and streamed.prompt_tokens == whole.prompt_tokens
    assert streamed.cached_tokens > 0  # the same prompt again: its full blocks come from the prefix cache
    assert streamed.ttft_s > 0 and 1 <= streamed.decode_passes <= 10


def test_local_through_plain_litellm_sync_and_async(local_tiny):
    r = litellm.completion(model=local_tiny, messages=MESSAGES, max_tokens=4, temperature=0)
    assert r.usage.prompt_tokens_details.cached_tokens is not None
    assert r.choices[0].message.content

    async def both():
        a = await litellm.acompletion(model=local_tiny, messages=MESSAGES, max_tokens=4, temperature=0)
        s = await litellm.acompletion(model=local_tiny, messages=MESSAGES, max_tokens=4, temperature=0,
                                      stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in s if c.choices])
        return a.choices[0].message.content, text

    a_text, s_text = asyncio.run(both())
    assert a_text == s_text == r.choices[0].message.content


def test_abandoned_local_stream_frees_its_blocks(local_tiny):
    stream = litellm.completion(model=local_tiny, messages=MESSAGES, max_tokens=500, ignore_eos=True,
                                stream=True)
    next(iter(stream))
    stream.completion_stream.close()  # the caller stops reading
    stats = local_engine("tiny").stats()
    assert stats.blocks_in_use == 0 and stats.num_running == 0


def test_local_bad_request_is_a_clear_error(local_tiny):
    with pytest.raises(Exception, match="context"):
        complete(local_tiny, [{"role": "user", "content": "word " * 3000}], max_tokens=2)


TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("asked,named", [
    ({"tools": TOOLS}, "tools"), ({"tools": TOOLS, "tool_choice": "required"}, "tool_choice, tools"),
    ({"logprobs": True}, "logprobs"), ({"logit_bias": {"1": 5}}, "logit_bias"),
    ({"extra_body": {"frobnicate": 1}}, "frobnicate")])
def test_a_parameter_local_does_not_implement_is_a_400_naming_it(local_tiny, asked, named):
    """Before, local/ dropped them without a word: tools asked for, plain text answered."""
    with pytest.raises(litellm.BadRequestError, match=f"does not implement {named}"):
        litellm.completion(model=local_tiny, messages=MESSAGES, max_tokens=4, **asked)


def test_local_applies_the_penalties_as_the_server_does(server, local_tiny):
    penalties = {"presence_penalty": -2, "frequency_penalty": -1.5}  # rewarded repetition: a loop
    plain = complete(local_tiny, MESSAGES, max_tokens=24, ignore_eos=True)
    in_process = complete(local_tiny, MESSAGES, max_tokens=24, ignore_eos=True, **penalties)
    via_server = complete("openai/tiny", MESSAGES, max_tokens=24, api_base=server.url + "/v1",
                          ignore_eos=True, **penalties)
    assert in_process.text == via_server.text != plain.text


def test_a_local_engines_numerics_are_there_for_evals_to_record(tiny_llama):
    from deltaserve.cli.quant_options import add_quant_options, quant_kwargs
    from deltaserve.engine import Engine
    from deltaserve.harness.local_provider import engine_numerics

    parser = argparse.ArgumentParser()
    add_quant_options(parser)
    options = quant_kwargs(parser.parse_args(["--deterministic"]))
    register_local_engine("tiny-deterministic", Engine.from_pretrained(str(tiny_llama), num_blocks=64,
                                                                       **options))
    assert engine_numerics("local/tiny-deterministic") == {
        "dtype": "float32", "quant": "none", "attention": "deterministic", "deterministic": True,
        "compile_decode": "off"}
    assert quant_kwargs(parser.parse_args([])) == {}  # unset: EngineConfig decides
    assert engine_numerics("openai/gpt-4o-mini") is None


def test_local_takes_structured_outputs_as_the_server_does(server, local_tiny):
    files = {"calc.py": "def add(a, b):\n    return a - b\n"}
    edits = {"structured_outputs": {"edits": {"format": "search_replace", "files": files}}}
    in_process = complete(local_tiny, MESSAGES, max_tokens=40, extra_body=edits)
    via_server = complete("openai/tiny", MESSAGES, max_tokens=40, api_base=server.url + "/v1",
                          extra_body=edits)
    assert in_process.text == via_server.text
    assert in_process.text.startswith("calc.py\n```\n<<<<<<< SEARCH\n")
    regex = complete(local_tiny, MESSAGES, max_tokens=16,
                     extra_body={"structured_outputs": {"regex": "[ab]{3}"}})
    assert len(regex.text) == 3 and set(regex.text) <= {"a", "b"}
    json_reply = complete(local_tiny, MESSAGES, max_tokens=40, response_format={"type": "json_object"})
    assert json_reply.text.startswith("{")
    with pytest.raises(litellm.BadRequestError):
        complete(local_tiny, MESSAGES, max_tokens=4, extra_body={"structured_outputs": {"regex": "(x"}})


def test_async_requests_step_the_engine_on_threads_that_end(local_tiny, monkeypatch):
    """Each acompletion / async stream steps the engine on a thread of its own that ends with it: an executor
    thread would persist and keep an OpenMP pool of its own (engine/passing_thread.py)."""
    import threading

    eng = local_engine("tiny")
    stepped_on: set[threading.Thread] = set()
    step = eng.step

    def recorded_step():
        stepped_on.add(threading.current_thread())
        return step()

    monkeypatch.setattr(eng, "step", recorded_step)

    async def requests():
        whole = await litellm.acompletion(model=local_tiny, messages=MESSAGES, max_tokens=4, ignore_eos=True)
        stream = await litellm.acompletion(model=local_tiny, messages=MESSAGES, max_tokens=4, ignore_eos=True,
                                           stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        return whole.choices[0].message.content, text

    whole, streamed = asyncio.run(requests())
    assert whole == streamed
    assert len(stepped_on) == 2 and threading.main_thread() not in stepped_on
    assert not any(thread.is_alive() for thread in stepped_on)


def test_an_abandoned_async_stream_frees_its_blocks_and_errors_reach_the_caller(local_tiny):
    async def abandon():
        stream = await litellm.acompletion(model=local_tiny, messages=MESSAGES, max_tokens=500,
                                           ignore_eos=True, stream=True)
        chunks = stream.completion_stream
        await chunks.__anext__()
        await chunks.aclose()  # the caller stops reading: the request is aborted on its own thread

    asyncio.run(abandon())
    stats = local_engine("tiny").stats()
    assert stats.blocks_in_use == 0 and stats.num_running == 0

    async def too_long():
        too_long_prompt = [{"role": "user", "content": "word " * 3000}]
        return await litellm.acompletion(model=local_tiny, messages=too_long_prompt, max_tokens=2)

    with pytest.raises(litellm.BadRequestError, match="context"):
        asyncio.run(too_long())
