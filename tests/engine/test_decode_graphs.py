"""Decode on static buffers (what a CUDA graph replays), run eagerly on CPU: the same tokens and KV as the
per-step plan, at every batch size a bucket pads, with prefill chunks in between."""

from __future__ import annotations

import pytest
import torch

from deltaserve.engine import SamplingParams
from deltaserve.engine.decode_graphs import bucket_for
from deltaserve.engine.forward_batch import Span

GREEDY = SamplingParams(max_tokens=12, temperature=0.0, ignore_eos=True)


def _run(make_engine, graphs: bool, prompts, params):
    eng = make_engine(attention="flex", decode_graphs=graphs, max_num_batched_tokens=24)
    outs = eng.generate(prompts, params)
    return eng, outs


@pytest.mark.parametrize("batch", [1, 3, 5])
def test_static_decode_gives_the_per_step_plans_tokens_and_kv(make_engine, batch):
    prompts = [list(range(10 + i, 10 + i + 7 * (i + 1))) for i in range(batch)]  # chunked, staggered
    sampled = SamplingParams(max_tokens=12, temperature=0.9, seed=3, ignore_eos=True)
    params = [GREEDY] * (batch - 1) + [sampled]
    plain, plain_outs = _run(make_engine, False, prompts, params)
    static, static_outs = _run(make_engine, True, prompts, params)
    assert [o.token_ids for o in static_outs] == [o.token_ids for o in plain_outs]
    assert static.runner.graphs.graphs, "no step took the static path"
    assert set(static.runner.graphs.graphs) <= {bucket_for(n) for n in range(1, batch + 1)}
    usable = slice(0, static.kv.scratch_slot)  # the padded rows wrote only to the scratch slot
    torch.testing.assert_close(static.kv.k_heads[:, :, usable], plain.kv.k_heads[:, :, usable])
    torch.testing.assert_close(static.kv.v_heads[:, :, usable], plain.kv.v_heads[:, :, usable])


def test_spans_a_bucket_cannot_take_run_the_plain_forward(make_engine):
    eng = make_engine(attention="flex", decode_graphs=True, max_num_seqs=4, speculative="ngram")
    graphs = eng.runner.graphs
    assert graphs.accepts([Span([1], 5, [0], [0])] * 4)
    assert not graphs.accepts([Span([1], 5, [0], [0])] * 5)  # beyond max_num_seqs
    assert not graphs.accepts([Span([1, 2], 5, [0], [0, 1])])  # a verify span
    assert not graphs.accepts([Span([1, 2, 3], 0, [0], [2])])  # a prefill chunk
