"""The public Engine API on a tiny real model: generate, stream, abort, errors, stops, forcing, faults."""

from __future__ import annotations

import threading

import pytest

import deltaserve.engine.engine as engine_module
from deltaserve.engine import Engine, InvalidRequestError, ModelNotFoundError, RequestOutput, SamplingParams
from deltaserve.errors import ContextLengthError

GREEDY = SamplingParams(max_tokens=12, ignore_eos=True)


def test_generate_returns_outputs_with_metrics(make_engine):
    eng = make_engine()
    outs = eng.generate(["Hello there", [1, 2, 3, 4, 5]], GREEDY)
    assert [type(o) for o in outs] == [RequestOutput, RequestOutput]
    for o in outs:
        assert o.finished and o.finish_reason == "length"
        assert len(o.token_ids) == 12
        assert o.text == eng.tokenizer.decode(o.token_ids, skip_special_tokens=True)
        m = o.metrics
        assert m.completion_tokens == 12 and m.decode_passes == 11 and len(m.itl_s) == 11
        assert m.prefill_tokens_computed == m.prompt_tokens - m.cached_tokens
        assert m.ttft_s > 0 and m.decode_s > 0
    assert outs[1].metrics.prompt_tokens == 5
    assert outs[0].prompt_token_ids == eng.tokenizer("Hello there")["input_ids"]


def test_greedy_is_deterministic_and_batch_independent(make_engine):
    eng = make_engine()
    alone = eng.generate("The quick brown fox", GREEDY)[0].token_ids
    together = eng.generate(["The quick brown fox", "Something else entirely"], GREEDY)[0].token_ids
    assert alone == together


def test_stream_deltas_add_up_to_text(make_engine):
    eng = make_engine()
    chunks = list(eng.stream("Stream me", SamplingParams(max_tokens=10, ignore_eos=True)))
    assert chunks[-1].finished and not any(c.finished for c in chunks[:-1])
    assert "".join(c.new_text for c in chunks) == chunks[-1].text
    assert sum(len(c.new_token_ids) for c in chunks) == 10


def test_stream_closed_early_frees_blocks(make_engine):
    eng = make_engine()
    gen = eng.stream("Stop reading me", SamplingParams(max_tokens=50, ignore_eos=True))
    next(gen), next(gen)
    gen.close()
    eng.step()  # reports the abort
    assert not eng.has_unfinished()


def test_abort_frees_blocks_at_once_and_reports(make_engine):
    eng = make_engine()
    rid = eng.add_request("abort me please", SamplingParams(max_tokens=100, ignore_eos=True))
    keep = eng.add_request("keep me", SamplingParams(max_tokens=5, ignore_eos=True))
    eng.step()
    eng.step()
    in_use = eng.stats().blocks_in_use
    eng.abort(rid)
    assert eng.stats().blocks_in_use < in_use
    outs = eng.step()
    aborted = [o for o in outs if o.request_id == rid]
    assert aborted and aborted[0].finished and aborted[0].finish_reason == "abort"
    while eng.has_unfinished():
        outs = eng.step()
    assert eng.stats().num_running == 0 and keep not in eng.requests


def test_sampling_with_seed_is_reproducible(make_engine):
    eng = make_engine()
    p = SamplingParams(max_tokens=16, temperature=1.0, top_k=50, top_p=0.9, seed=7, ignore_eos=True)
    a = eng.generate("sample", p)[0].token_ids
    b = eng.generate("sample", p)[0].token_ids
    c = eng.generate("sample", p.model_copy(update={"seed": 8}))[0].token_ids
    assert a == b and a != c


def test_stop_string_is_excluded(make_engine):
    eng = make_engine()
    free = eng.generate("Say something", SamplingParams(max_tokens=20, ignore_eos=True))[0]
    stop = free.text[5:9]
    assert stop.strip(), free.text
    never = "\x00never"
    out = eng.generate("Say something", SamplingParams(max_tokens=20, ignore_eos=True, stop=[never, stop]))[0]
    assert out.finish_reason == "stop" and out.stop_string == stop  # which ended it (Anthropic reports it)
    assert out.text == free.text[: free.text.find(stop)]
    assert free.stop_string is None and out.metrics.completion_tokens < 20
    chunks = list(eng.stream("Say something", SamplingParams(max_tokens=20, ignore_eos=True, stop=[stop])))
    assert "".join(c.new_text for c in chunks) == out.text


def test_eos_stops_unless_ignored(make_engine):
    eng = make_engine()
    eos = next(iter(eng.eos_token_ids))
    forced = [100, 200, eos, 300]
    out = eng.generate("x", SamplingParams(max_tokens=10, forced_token_ids=forced))[0]
    assert out.token_ids == [100, 200, eos] and out.finish_reason == "stop"
    out = eng.generate("x", SamplingParams(max_tokens=10, forced_token_ids=forced, ignore_eos=True))[0]
    assert out.token_ids == forced and out.finish_reason == "stop"


def test_forced_tokens_cost_one_decode_pass_each(make_engine):
    eng = make_engine()
    forced = eng.tokenizer("def add(a, b):\n    return a + b\n")["input_ids"]
    params = SamplingParams(max_tokens=100, forced_token_ids=forced, ignore_eos=True)
    out = eng.generate("Write add.", params)[0]
    assert out.token_ids == forced
    assert out.metrics.decode_passes == len(forced) - 1
    capped = eng.generate("Write add.", SamplingParams(max_tokens=3, forced_token_ids=forced))[0]
    assert capped.token_ids == forced[:3] and capped.finish_reason == "length"


def test_chat_template(make_engine):
    eng = make_engine()
    ids = eng.apply_chat_template([{"role": "user", "content": "hi"}])
    text = eng.tokenizer.decode(ids)
    assert "hi" in text and text.rstrip().endswith("assistant")
    assert eng.generate(ids, SamplingParams(max_tokens=3))[0].metrics.prompt_tokens == len(ids)


@pytest.mark.parametrize(
    "prompt, params, match",
    [
        ("", None, "empty"),
        ([], None, "empty"),
        ([1, 2, 10**9], None, "out of range"),
        (3.5, None, "string or a list"),
        ("ok", {"max_tokens": 0}, "max_tokens"),
        ("ok", {"temperature": -1}, "temperature"),
        ("ok", {"top_p": 0}, "top_p"),
        ("ok", {"bogus": 1}, "bogus"),
        ("ok", {"forced_token_ids": []}, "forced_token_ids"),
    ],
)
def test_bad_requests_are_clear_value_errors(make_engine, prompt, params, match):
    eng = make_engine()
    with pytest.raises(InvalidRequestError, match=match) as info:
        eng.add_request(prompt, params)
    assert isinstance(info.value, ValueError)
    assert not eng.has_unfinished()


def test_prompt_longer_than_context(make_engine):
    eng = make_engine(max_model_len=64)
    with pytest.raises(ContextLengthError, match="maximum context length is 64 tokens. However, your "
                       "messages resulted in 64 tokens, which leaves none to generate"):
        eng.add_request(list(range(10, 74)))
    out = eng.generate(list(range(10, 60)), SamplingParams(max_tokens=100, ignore_eos=True))[0]
    assert out.finish_reason == "length" and len(out.token_ids) == 14  # stops at the context end


def test_duplicate_request_id(make_engine):
    eng = make_engine()
    eng.add_request("a", request_id="same")
    with pytest.raises(InvalidRequestError, match="already in use"):
        eng.add_request("b", request_id="same")
    eng.abort("same")
    eng.step()


def test_unknown_model_names_accepted_forms(tmp_path):
    with pytest.raises(ModelNotFoundError, match="accepted forms") as info:
        Engine.from_pretrained("no-such-model-anywhere")
    assert isinstance(info.value, ValueError)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelNotFoundError, match="config.json"):
        Engine.from_pretrained(str(tmp_path / "empty"))


def test_precision_is_probed_before_the_tokenizer_thread_starts(make_engine, monkeypatch):
    """The CPU probes (dtype, quantization) take milliseconds alone but waited ~0.9 s for the GIL beside the
    tokenizer's loading thread on the 1.5B model's start: from_pretrained resolves them before it starts."""
    seen: list[list[str]] = []
    real = engine_module.resolve_precision

    def probing(config):
        seen.append([t.name for t in threading.enumerate()])
        return real(config)

    monkeypatch.setattr(engine_module, "resolve_precision", probing)
    eng = make_engine()
    assert len(seen) == 1 and not any(name.startswith("tokenizer") for name in seen[0])
    assert (eng.device, eng.dtype, eng.quant) == real(eng.config)


def test_one_failing_request_does_not_take_down_the_batch(make_engine, monkeypatch):
    """Fault injection: choosing one request's token raises; it alone ends with "error"."""
    eng = make_engine()
    real = engine_module.next_token

    def flaky(seq, sampled):
        if seq.request_id == "bad" and seq.num_output_tokens == 3:
            raise RuntimeError("injected sampler fault")
        return real(seq, sampled)

    expected = eng.generate(["good one", "good two"], GREEDY)
    monkeypatch.setattr(engine_module, "next_token", flaky)
    ids = [eng.add_request("good one", GREEDY), eng.add_request("bad apple", GREEDY, request_id="bad"),
           eng.add_request("good two", GREEDY)]
    done = {}
    while eng.has_unfinished():
        for out in eng.step():
            if out.finished:
                done[out.request_id] = out
    assert done["bad"].finish_reason == "error" and "injected sampler fault" in done["bad"].error
    assert len(done["bad"].token_ids) == 3
    assert [done[ids[0]].token_ids, done[ids[2]].token_ids] == [o.token_ids for o in expected]
    assert done[ids[0]].finish_reason == "length"


def test_failing_forward_pass_fails_only_that_step(make_engine, monkeypatch):
    eng = make_engine()
    real_forward = eng.model.forward
    calls = {"n": 0}

    def broken(batch, kv):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("injected forward fault")
        return real_forward(batch, kv)

    monkeypatch.setattr(eng.model, "forward", broken)
    out = eng.generate("first", GREEDY)[0]
    assert out.finish_reason == "error" and "injected forward fault" in out.error
    assert eng.generate("second", GREEDY)[0].finish_reason == "length"
