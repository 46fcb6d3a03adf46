"""Speculative decoding in the engine: exact outputs, real acceptances, KV rollback, counters, limits.

Most tests use a *copying* tiny model: a 256-token-vocabulary llama whose attention output is scaled
down to 0.5%, so its next token depends mostly on the last one. Fed a prompt that holds an earlier
stretch of its own greedy output, it mostly repeats that stretch (prompt-lookup drafts get accepted)
but not always (the faint attention still flips some tokens: drafts get rejected), and that attention
still makes a wrong KV cache visible in the logits.
"""

from __future__ import annotations

import random

import pytest
import torch
from safetensors.torch import load_file, save_file

from deltaserve.engine import Engine, EngineConfig, SamplingParams
from deltaserve.engine.forward_batch import Span
from deltaserve.testing.tiny_model import make_tiny_model_dir

GREEDY = SamplingParams(max_tokens=48, ignore_eos=True)


@pytest.fixture(scope="module")
def copy_model(tmp_path_factory):
    path = make_tiny_model_dir(tmp_path_factory.mktemp("copy-model") / "llama256", "llama", vocab_size=256)
    weights = load_file(path / "model.safetensors")
    for name in weights:
        if name.endswith("o_proj.weight"):
            weights[name] = weights[name] * 0.005
    save_file(weights, path / "model.safetensors", metadata={"format": "pt"})
    return path


@pytest.fixture
def engines(make_engine, copy_model):
    def make(**config):
        return make_engine(copy_model, **config)
    return make


def copy_prompts(eng: Engine, n: int, seed: int = 0) -> list[list[int]]:
    """Prompts holding an earlier stretch of the model's own greedy continuation (so it tends to repeat
    it), plus plain repeated text."""
    rng = random.Random(seed)
    prompts = []
    for i in range(n):
        start = [rng.randrange(3, 256) for _ in range(rng.choice([3, 8, 20]))]
        if i % 3 == 2:
            prompts.append(start * rng.choice([2, 5]))
            continue
        own = eng.generate(start, SamplingParams(max_tokens=60, ignore_eos=True))[0].token_ids
        prompts.append(own + start + own[: rng.choice([2, 5])])
    return prompts


def totals(outs):
    return (sum(o.metrics.accepted_draft_tokens for o in outs),
            sum(o.metrics.rejected_draft_tokens for o in outs))


def assert_counters_add_up(outs):
    for o in outs:
        m = o.metrics
        # the first token comes with the prefill; every decode pass adds one own token + its accepted drafts
        assert m.completion_tokens == len(o.token_ids) == m.accepted_draft_tokens + m.decode_passes + 1, m


def record_plans(eng: Engine) -> list:
    """Keep every SchedulerOutput the engine's steps get."""
    plans = []
    schedule = eng.scheduler.schedule

    def recording_schedule():
        plans.append(schedule())
        return plans[-1]

    eng.scheduler.schedule = recording_schedule
    return plans


def test_speculation_is_on_by_default_and_the_flag_turns_it_off(engines):
    assert EngineConfig().speculative
    assert engines(speculative=True).drafter is not None
    assert engines(speculative=False).drafter is None


def test_greedy_identical_with_and_without_speculation(engines):
    off = engines(speculative=False)
    prompts = copy_prompts(off, 12)
    ref = [off.generate(p, GREEDY)[0].token_ids for p in prompts]
    on = engines(speculative=True)
    outs = [on.generate(p, GREEDY)[0] for p in prompts]
    assert [o.token_ids for o in outs] == ref
    accepted, rejected = totals(outs)
    assert accepted > 100 and rejected > 0  # drafts really were taken, and some really were rolled back
    assert sum(o.metrics.decode_passes for o in outs) < sum(len(t) - 1 for t in ref)
    assert_counters_add_up(outs)
    s = on.stats()
    assert s.draft_tokens == accepted + rejected and s.accepted_draft_tokens == accepted


def test_batched_chunked_prefill_identical(engines):
    off = engines(speculative=False)
    prompts = copy_prompts(off, 10, seed=1)
    ref = [off.generate(p, GREEDY)[0].token_ids for p in prompts]
    # 40-token budget: long prompts are prefilled in chunks while others verify k+1-token spans
    on = engines(speculative=True, max_num_batched_tokens=40, max_num_seqs=10)
    plans = record_plans(on)
    outs = on.generate(prompts, GREEDY)
    assert [o.token_ids for o in outs] == ref
    assert totals(outs)[0] > 50
    drafting = [p for p in plans if any(sp.num_drafts for sp in p.spans)]
    # with plain decodes
    assert any(any(not sp.num_drafts and sp.completes for sp in p.spans) for p in drafting)
    assert any(any(not sp.completes for sp in p.spans) for p in drafting)  # next to a prefill chunk
    assert_counters_add_up(outs)


def test_draft_span_counts_against_the_token_budget(engines):
    eng = engines(speculative=True, max_num_batched_tokens=7, num_speculative_tokens=4)
    prompts = copy_prompts(engines(speculative=False), 2, seed=2)
    plans = record_plans(eng)
    outs = eng.generate(prompts, GREEDY)
    assert all(sum(sp.num_tokens + sp.num_drafts for sp in plan.spans) <= 7 for plan in plans)
    assert any(len(plan.spans) == 2 and any(sp.num_drafts for sp in plan.spans) for plan in plans)
    assert totals(outs)[0] > 0
    assert_counters_add_up(outs)


def test_preemption_tiny_pool_identical(engines):
    off = engines(speculative=False)
    prompts = copy_prompts(off, 8, seed=3)
    ref = [off.generate(p, GREEDY)[0].token_ids for p in prompts]
    tiny = engines(speculative=True, num_blocks=24, block_size=8, max_num_batched_tokens=64)
    outs = tiny.generate(prompts, GREEDY)
    assert [o.token_ids for o in outs] == ref
    s = tiny.stats()
    assert s.preemptions > 0 and s.accepted_draft_tokens > 0
    assert_counters_add_up(outs)


def _follow_up_logits(eng: Engine, rid: str) -> torch.Tensor:
    """Logits of the next decode step of a running request, computed on its current KV."""
    seq = eng.requests[rid]
    span = Span([seq.token_ids[-1]], seq.num_computed_tokens, seq.block_table, [0])
    with torch.inference_mode():
        return eng.runner.logits([span])[0]


def _kv_of(eng: Engine, rid: str) -> tuple[torch.Tensor, torch.Tensor]:
    seq = eng.requests[rid]
    bs = eng.config.block_size
    slots = torch.tensor([seq.block_table[p // bs] * bs + p % bs for p in range(seq.num_computed_tokens)])
    return eng.kv.k[:, slots].clone(), eng.kv.v[:, slots].clone()


def test_kv_after_rejections_equals_plain_decode(engines):
    prompt = copy_prompts(engines(speculative=False), 1, seed=7)[0]
    on = engines(speculative=True, block_size=4)
    rid = on.add_request(prompt, SamplingParams(max_tokens=200, ignore_eos=True))
    seq = on.requests[rid]
    rejected_last = False
    while not (rejected_last and seq.metrics.accepted_draft_tokens > 5):  # stop right after a rollback
        before = seq.metrics.rejected_draft_tokens
        on.step()
        assert not seq.finished, "no rollback happened in this prompt"
        rejected_last = seq.metrics.rejected_draft_tokens > before
    # rolled back: the KV ends right before the newest token, and no block past it is held
    assert seq.num_computed_tokens == seq.num_tokens - 1
    assert len(seq.block_table) == -(-seq.num_computed_tokens // 4)
    generated = list(seq.output_token_ids)

    off = engines(block_size=4)
    ref = off.add_request(prompt, SamplingParams(max_tokens=200, ignore_eos=True,
                                                 forced_token_ids=generated + [7]))
    while off.requests[ref].num_output_tokens < len(generated):
        off.step()
    assert off.requests[ref].token_ids == seq.token_ids
    for a, b in zip(_kv_of(on, rid), _kv_of(off, ref), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(_follow_up_logits(on, rid), _follow_up_logits(off, ref), rtol=1e-5, atol=1e-5)
    on.abort(rid)
    off.abort(ref)
    on.step(), off.step()


def test_unconfirmed_drafts_are_never_hashed_into_the_prefix_cache(engines):
    eng = engines(speculative=True, block_size=4)
    bm, bs = eng.blocks, 4
    prompts = copy_prompts(engines(speculative=False), 4, seed=5)
    ids = [eng.add_request(p, GREEDY) for p in prompts]
    final = {}
    while eng.has_unfinished():
        for out in eng.step():
            if out.finished:
                final[out.request_id] = out.prompt_token_ids + out.token_ids
        for seq in eng.scheduler.running:  # hashed blocks hold confirmed tokens only
            assert len(seq.block_hashes) * bs <= min(seq.num_computed_tokens, seq.num_tokens)
            for b, h in enumerate(seq.block_hashes):
                if bm.hash_of[seq.block_table[b]] == h:
                    assert bm.tokens_of[seq.block_table[b]] == tuple(seq.token_ids[b * bs:(b + 1) * bs])
    assert eng.stats().draft_tokens > eng.stats().accepted_draft_tokens  # rejections happened
    seqs = [final[r] for r in ids]
    for block, h in enumerate(bm.hash_of):  # every cached block is an aligned chunk of a final sequence
        if h is not None:
            chunk = bm.tokens_of[block]
            assert any(tuple(t[i:i + bs]) == chunk for t in seqs for i in range(0, len(t) - bs + 1, bs))


def test_sampling_with_seed_is_the_same_with_speculation(engines):
    off = engines(speculative=False)
    prompts = copy_prompts(off, 6, seed=6)
    params = [SamplingParams(max_tokens=40, temperature=0.3, seed=i, ignore_eos=True) for i in range(6)]
    ref = [o.token_ids for o in off.generate(prompts, params)]
    on = engines(speculative=True)
    outs = on.generate(prompts, params)
    # each position draws once from the same generator whether its token was drafted or not
    assert [o.token_ids for o in outs] == ref
    assert totals(outs)[0] > 20
    assert [o.token_ids for o in on.generate(prompts, params)] == ref
    assert_counters_add_up(outs)


# ---- text, teacher forcing and limits, on the regular tiny llama (SmolLM2 tokenizer) ----

CODE = "".join(f"def f{i}(x):\n    return x * {i} + {i % 3}\n\n" for i in range(12))


def _forced(eng, prompt_ids, reply_ids, **params):
    params.setdefault("max_tokens", len(reply_ids))
    return eng.generate(prompt_ids, SamplingParams(forced_token_ids=reply_ids, **params))[0]


def test_forced_copy_reply_needs_fewer_passes(make_engine):
    off, on = make_engine(speculative=False), make_engine(speculative=True)
    tok = on.tokenizer
    prompt = tok.encode("Fix the file:\n" + CODE)
    edited = CODE.replace("return x * 5 + 2", "return x * 5 + 20").replace("def f9(x)", "def f9(x, y=0)")
    reply = tok.encode(edited, add_special_tokens=False)
    a, b = _forced(off, prompt, reply), _forced(on, prompt, reply)
    assert a.token_ids == b.token_ids == reply
    assert a.metrics.decode_passes == len(reply) - 1
    assert b.metrics.decode_passes < len(reply) / 3 and b.metrics.rejected_draft_tokens > 0
    assert_counters_add_up([b])
    # passes that verified no draft are timed apart: without drafting all of them, with it only some
    assert a.metrics.plain_passes == a.metrics.decode_passes and a.metrics.plain_pass_s > 0
    assert b.metrics.plain_passes < b.metrics.decode_passes


def test_prediction_drafts_a_whole_file_reply(make_engine):
    on = make_engine(speculative=True, num_speculative_tokens=8)
    tok = on.tokenizer
    prompt = tok.encode("Rewrite it.")  # the file is not in the prompt: only the prediction can draft it
    edited = CODE.replace("def f3(x):\n", "def f3(x):\n    assert x\n")
    edited = edited.replace("def f8(x):\n    return x * 8 + 2\n\n", "")
    reply = tok.encode(edited, add_special_tokens=False)
    out = _forced(on, prompt, reply, prediction=CODE)
    assert out.token_ids == reply
    m = out.metrics
    # drafting resumed after both edits: far fewer passes than tokens
    assert m.decode_passes < len(reply) / 4, m
    assert_counters_add_up([out])
    # greedy (not forced) with a prediction decodes exactly what it decodes without one
    free = SamplingParams(max_tokens=30, ignore_eos=True)
    plain = make_engine(speculative=False).generate(prompt, free)[0].token_ids
    assert on.generate(prompt, free.model_copy(update={"prediction": CODE}))[0].token_ids == plain


def _limit_case(make_engine, reply_fn=lambda r: r, **params):
    """Forced copy of CODE (from the prompt) under a limit; (spec-off output, spec-on output)."""
    outs = []
    for spec in (False, True):
        eng = make_engine(speculative=spec)
        tok = eng.tokenizer
        prompt = tok.encode("Copy:\n" + CODE) + [2, 2]  # 2 = <|endoftext|>
        reply = reply_fn(tok.encode(CODE, add_special_tokens=False))
        params.setdefault("max_tokens", len(reply))
        outs.append(eng.generate(prompt, SamplingParams(forced_token_ids=reply, **params))[0])
    return outs


def test_stop_string_inside_an_accepted_run(make_engine):
    a, b = _limit_case(make_engine, stop=["* 6 + 0"])
    assert b.metrics.accepted_draft_tokens > 20  # the stop string came inside drafted text
    assert (a.token_ids, a.text, a.finish_reason) == (b.token_ids, b.text, b.finish_reason)
    assert b.finish_reason == "stop" and b.text.endswith("return x ") and "* 6 + 0" not in b.text
    assert_counters_add_up([b])


def test_eos_inside_an_accepted_run(make_engine):
    a, b = _limit_case(make_engine, reply_fn=lambda r: r + [2] + r[:10], ignore_eos=False)
    assert a.finish_reason == b.finish_reason == "stop"
    assert a.token_ids == b.token_ids and b.token_ids[-1] == 2
    assert b.metrics.accepted_draft_tokens > 20
    assert_counters_add_up([b])


def test_max_tokens_inside_a_copy(make_engine):
    a, b = _limit_case(make_engine, max_tokens=37)
    assert a.token_ids == b.token_ids and len(b.token_ids) == 37 and b.finish_reason == "length"
    assert b.metrics.accepted_draft_tokens > 10
    assert_counters_add_up([b])


def test_penalised_greedy_identical_with_and_without_speculation(engines):
    """A verify pass's row j counts drafts[:j] as generated: drafting never changes a penalised output."""
    off = engines(speculative=False)
    prompts = copy_prompts(off, 6, seed=3)
    params = SamplingParams(max_tokens=48, ignore_eos=True, presence_penalty=0.4, frequency_penalty=0.2)
    ref = [off.generate(p, params)[0].token_ids for p in prompts]
    assert ref != [off.generate(p, GREEDY)[0].token_ids for p in prompts]  # the penalties do change it
    on = engines(speculative=True)
    outs = [on.generate(p, params)[0] for p in prompts]
    assert [o.token_ids for o in outs] == ref
    accepted, rejected = totals(outs)
    assert accepted > 0 and rejected > 0


def test_accepted_drafts_get_their_rows_logprobs(engines):
    """Logprobs with speculation on: each accepted draft carries the logprobs of its verify row, the same as
    a plain decode's (up to the float noise of a wider pass)."""
    off = engines(speculative=False)
    prompts = copy_prompts(off, 4, seed=4)
    params = SamplingParams(max_tokens=40, ignore_eos=True, logprobs=2)
    ref = [off.generate(p, params)[0] for p in prompts]
    on = engines(speculative=True)
    outs = [on.generate(p, params)[0] for p in prompts]
    assert totals(outs)[0] > 0
    for o, r in zip(outs, ref, strict=True):
        assert o.token_ids == r.token_ids and [lp.token_id for lp in o.logprobs] == o.token_ids
        for a, b in zip(o.logprobs, r.logprobs, strict=True):
            assert a.logprob == pytest.approx(b.logprob, abs=1e-4)
            assert [t for t, _ in a.top] == [t for t, _ in b.top]
