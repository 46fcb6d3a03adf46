"""Continuous batching, chunked prefill and preemption keep greedy outputs identical."""

from __future__ import annotations

import random

from deltaserve.engine import SamplingParams


def mixed_prompts(n, seed=0):
    rng = random.Random(seed)
    return [[rng.randrange(100, 40000) for _ in range(rng.choice([3, 17, 40, 90, 150]))] for _ in range(n)]


def run_alone(eng, prompts, params):
    return [eng.generate(p, params)[0].token_ids for p in prompts]


def test_sixteen_concurrent_equal_alone(make_engine):
    prompts = mixed_prompts(16)
    params = SamplingParams(max_tokens=20, ignore_eos=True)
    alone = run_alone(make_engine(enable_prefix_caching=False), prompts, params)
    eng = make_engine(max_num_batched_tokens=128, max_num_seqs=16)
    outs = eng.generate(prompts, params)
    assert [o.token_ids for o in outs] == alone


def test_chunked_prefill_interleaves_with_decode(make_engine):
    eng = make_engine(max_num_batched_tokens=32)
    short = eng.add_request([5, 6, 7], SamplingParams(max_tokens=30, ignore_eos=True))
    eng.step()  # short prompt prefilled, first token out
    long_prompt = list(range(200, 400))
    rid = eng.add_request(long_prompt, SamplingParams(max_tokens=5, ignore_eos=True))
    steps_while_prefilling = 0
    while eng.requests[rid].in_prefill:
        outs = eng.step()
        assert any(o.request_id == short for o in outs)  # decoding never stalls behind the long prefill
        steps_while_prefilling += 1
    assert steps_while_prefilling >= 200 // 32
    done = {o.request_id: o for o in eng.step_until_idle([short, rid])}
    plain = make_engine(enable_prefix_caching=False)
    fresh = plain.generate(long_prompt, SamplingParams(max_tokens=5, ignore_eos=True))
    assert done[rid].token_ids == fresh[0].token_ids


def test_tiny_pool_preempts_and_evicts_but_outputs_match(make_engine):
    prompts = mixed_prompts(8, seed=1)
    params = SamplingParams(max_tokens=40, ignore_eos=True)
    big = make_engine(num_blocks=512).generate(prompts, params)
    tiny = make_engine(num_blocks=24, block_size=8, max_num_batched_tokens=64)  # 192 token slots for 8 seqs
    outs = tiny.generate(prompts, params)
    assert [o.token_ids for o in outs] == [o.token_ids for o in big]
    s = tiny.stats()
    assert s.preemptions > 0 and s.evictions > 0


def test_max_num_seqs_caps_the_batch(make_engine):
    eng = make_engine(max_num_seqs=3)
    ids = [eng.add_request(p, SamplingParams(max_tokens=5, ignore_eos=True)) for p in mixed_prompts(7)]
    seen = 0
    while eng.has_unfinished():
        eng.step()
        seen = max(seen, eng.stats().num_running)
    assert seen == 3
    assert all(r not in eng.requests for r in ids)


def test_cache_aware_policy_outputs_match(make_engine):
    shared = list(range(300, 364))
    prompts = [list(range(1000, 1050)), shared + [1], list(range(2000, 2030)), shared + [2]]
    params = SamplingParams(max_tokens=8, ignore_eos=True)
    eng = make_engine(scheduling_policy="cache_aware", max_num_seqs=1)
    eng.generate(shared + [0], SamplingParams(max_tokens=1))
    outs = eng.generate(prompts, params)
    ref = run_alone(make_engine(enable_prefix_caching=False), prompts, params)
    assert [o.token_ids for o in outs] == ref
