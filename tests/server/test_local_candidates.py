"""`n` replies of one prompt on the in-process engine: decoded together in one continuous batch, the
prompt's prefill shared through the prefix cache, every reply's tokens and passes counted."""

from __future__ import annotations

import pytest

from deltaserve.engine import Engine
from deltaserve.harness.client import complete, complete_candidates, register_local_engine

CONTEXT = "Repository context:\n" + "\n".join(f"def g{i}(x): return x * {i}" for i in range(60))
MESSAGES = [{"role": "system", "content": CONTEXT}, {"role": "user", "content": "fix g3"}]


@pytest.fixture(scope="module")
def engine(tiny_llama):
    eng = Engine.from_pretrained(str(tiny_llama), dtype="float32", device="cpu", num_blocks=1024)
    register_local_engine("tiny-n", eng)
    return eng


def test_n_replies_decode_in_one_batch_and_share_the_prefill(engine, monkeypatch):
    steps = []
    real_step = engine.step
    monkeypatch.setattr(engine, "step", lambda: steps.append(len(engine.scheduler.running)) or real_step())
    got = complete_candidates(4, "local/tiny-n", MESSAGES, max_tokens=8, temperature=1.0, seed=7,
                              ignore_eos=True)
    assert len(got.texts) == 4 and len(set(got.texts)) > 1  # sampled with seeds 7..10
    assert got.completion_tokens == 32 and got.decode_passes >= 4 * 7
    # one at a time would take >= 4 x 8 steps; in one batch, all four are running at once
    assert max(steps) == 4 and len(steps) < 20
    # the prompt and its cached tokens counted once (a cold prompt: none, never fewer); the first ran the cold
    # prefill, the three later ones found all but its last, partial block in the prefix cache (four
    # prefills would compute 4x)
    computed = got.metrics["prefill_tokens_computed"]
    assert got.prompt_tokens > 300 and got.cached_tokens == 0
    assert got.prompt_tokens <= computed < 1.1 * got.prompt_tokens
    per_choice = got.metrics["choices"]
    assert [c["completion_tokens"] for c in per_choice] == [8] * 4


def test_a_provider_sending_fewer_choices_gets_the_rest_as_more_requests(engine):
    calls = []

    def one_choice(**kwargs):
        calls.append(kwargs)
        kwargs.pop("n", None)
        return complete(**kwargs)

    got = complete_candidates(3, "local/tiny-n", MESSAGES, max_tokens=4, temperature=1.0, seed=1,
                              ignore_eos=True, call=one_choice)
    assert len(got.texts) == 3 and len(calls) == 3 and got.completion_tokens == 12
    assert [c.get("seed") for c in calls] == [1, 2, 3]
    # every request's computed prompt tokens: the later ones hit the cache
    assert got.metrics["prefill_tokens_computed"] < 1.1 * got.prompt_tokens
    assert got.cached_tokens is not None and got.cached_tokens >= 0
