"""Our forward vs transformers' own forward: same weights, fp32, tight tolerance."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

from deltaserve.engine.attention.cpu import one_query_attention
from deltaserve.engine.forward_batch import Span
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.linear import can_prepack
from deltaserve.engine.loader import load_model
from deltaserve.engine.model import LlamaModel, rms_norm
from deltaserve.engine.model_runner import ModelRunner
from deltaserve.testing.tiny_model import make_tiny_model_dir

ATOL = 1e-4
BS = 16


def build(path):
    loaded = load_model(str(path))
    ours = LlamaModel(loaded.hf_config, loaded.weights, torch.float32, "cpu", 512)
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    kv = KVCache(ours.num_layers, 32, BS, ours.num_kv_heads, ours.head_dim, torch.float32,
                 torch.device("cpu"))
    return ours, hf, kv


def reference(hf, ids):
    with torch.inference_mode():
        return hf(torch.tensor([ids])).logits[0].float()


def run(model, kv, spans, backend="gather"):
    return ModelRunner(model, kv, BS, backend).logits(spans)


@pytest.fixture(params=["gather", "flex"])
def backend(request):
    """Both attention backends: the CPU kernels and flex_attention (the CUDA path's logic, run eagerly)."""
    return request.param


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "mistral"])
def test_multi_block_prompt_all_positions(tiny_model_dirs, arch, backend):
    ours, hf, kv = build(tiny_model_dirs[arch])
    ids = torch.randint(0, 49152, (70,), generator=torch.Generator().manual_seed(1)).tolist()
    ref = reference(hf, ids)
    blocks = [5, 3, 9, 1, 7]  # deliberately out of order
    got = run(ours, kv, [Span(ids, 0, blocks, list(range(70)))], backend)
    torch.testing.assert_close(got, ref, atol=ATOL, rtol=1e-4)
    # only the asked-for positions are returned
    last = run(ours, kv, [Span(ids, 0, blocks, [69])], backend)
    assert last.shape == (1, ref.shape[-1])
    torch.testing.assert_close(last[0], ref[69], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3"])
def test_chunked_prefill_and_mixed_batch(tiny_model_dirs, arch, backend):
    """Seq A: prefill in chunks of 30 (long span over cached context), then 25 while seq B prefills fresh,
    then A decodes one token while B runs a 4-token verify-like span with every position's logits."""
    ours, hf, kv = build(tiny_model_dirs[arch])
    gen = torch.Generator().manual_seed(2)
    a = torch.randint(0, 49152, (56,), generator=gen).tolist()
    b = torch.randint(0, 49152, (44,), generator=gen).tolist()
    ref_a, ref_b = reference(hf, a), reference(hf, b)
    bt_a, bt_b = [10, 2, 7, 4], [11, 12, 13]
    o1 = run(ours, kv, [Span(a[:30], 0, bt_a, [29])], backend)
    o2 = run(ours, kv, [Span(a[30:55], 30, bt_a, [24]), Span(b[:40], 0, bt_b, [39])], backend)
    o3 = run(ours, kv, [Span(a[55:56], 55, bt_a, [0]), Span(b[40:44], 40, bt_b, [0, 1, 2, 3])], backend)
    torch.testing.assert_close(o1[0], ref_a[29], atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(o2[0], ref_a[54], atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(o2[1], ref_b[39], atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(o3[0], ref_a[55], atol=ATOL, rtol=1e-4)
    torch.testing.assert_close(o3[1:], ref_b[40:44], atol=ATOL, rtol=1e-4)


def test_decode_batch_of_different_lengths(tiny_model_dirs, backend):
    ours, hf, kv = build(tiny_model_dirs["llama"])
    gen = torch.Generator().manual_seed(3)
    seqs = [torch.randint(0, 49152, (n,), generator=gen).tolist() for n in (5, 17, 33)]
    tables = [[0], [1, 2], [3, 4, 5]]
    for ids, bt in zip(seqs, tables, strict=True):
        run(ours, kv, [Span(ids[:-1], 0, bt, [])], backend)
    got = run(ours, kv, [Span(ids[-1:], len(ids) - 1, bt, [0]) for ids, bt in zip(seqs, tables, strict=True)],
              backend)
    for row, ids in zip(got, seqs, strict=True):
        torch.testing.assert_close(row, reference(hf, ids)[-1], atol=ATOL, rtol=1e-4)


def test_untied_lm_head_and_rope_scaling(tmp_path, backend):
    path = make_tiny_model_dir(tmp_path / "m", "llama", tie_word_embeddings=False,
                               rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0})
    ours, hf, kv = build(path)
    ids = list(range(100, 140))
    got = run(ours, kv, [Span(ids, 0, [0, 1, 2], list(range(40)))], backend)
    torch.testing.assert_close(got, reference(hf, ids), atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_long_chunk_over_cached_context(tiny_model_dirs, arch, backend):
    """A >128-token chunk after a cached prefix takes the SDPA-with-mask path."""
    ours, hf, kv = build(tiny_model_dirs[arch])
    ids = torch.randint(0, 49152, (200,), generator=torch.Generator().manual_seed(4)).tolist()
    ref = reference(hf, ids)
    blocks = list(range(19, 32))
    run(ours, kv, [Span(ids[:40], 0, blocks, [])], backend)
    got = run(ours, kv, [Span(ids[40:], 40, blocks, list(range(160)))], backend)
    torch.testing.assert_close(got, ref[40:], atol=ATOL, rtol=1e-4)


def test_bfloat16_forward_close_to_hf_bfloat16(tiny_model_dirs, backend):
    """bf16 (with oneDNN-prepacked weights where the CPU supports them) stays within bf16 noise of HF."""
    loaded = load_model(str(tiny_model_dirs["qwen2"]))
    ours = LlamaModel(loaded.hf_config, loaded.weights, torch.bfloat16, "cpu", 512)
    if can_prepack(torch.bfloat16, torch.device("cpu")):
        assert all(lin.prepacked for lin in ours.linears())
    hf = AutoModelForCausalLM.from_pretrained(tiny_model_dirs["qwen2"], dtype=torch.bfloat16).eval()
    kv = KVCache(ours.num_layers, 32, BS, ours.num_kv_heads, ours.head_dim, torch.bfloat16,
                 torch.device("cpu"))
    ids = torch.randint(0, 49152, (40,), generator=torch.Generator().manual_seed(5)).tolist()
    run(ours, kv, [Span(ids[:39], 0, [3, 4, 5], [])], backend)
    got = run(ours, kv, [Span(ids[39:], 39, [3, 4, 5], [0])], backend)[0]
    ref = reference(hf, ids)[-1]
    # a decode step over cached KV computes attention in another order than HF's SDPA: bf16 noise, smaller
    # than HF bf16's own distance from fp32 (mean ~0.05 on this model)
    diff = (got - ref).abs()
    assert diff.max() < 0.3 and diff.mean() < 0.05, (diff.max(), diff.mean())
    assert got.argmax() == ref.argmax()
    one_pass = run(ours, kv, [Span(ids, 0, [6, 7, 8], [39])], backend)[0]
    if backend == "gather":  # one fresh pass takes the same kernels as HF: (near) identical
        torch.testing.assert_close(one_pass, ref, atol=0.02, rtol=0.01)
    else:  # flex reads the pool in its own order: bf16 noise, as above
        diff = (one_pass - ref).abs()
        assert diff.max() < 0.3 and diff.mean() < 0.05, (diff.max(), diff.mean())


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("blocks", [[4, 5, 6, 7], [9, 2, 6, 0]], ids=["consecutive", "scattered"])
def test_one_token_decode_reads_consecutive_blocks_as_a_view_and_scattered_ones_gathered(
        tiny_model_dirs, arch, blocks):
    """Batch-1 decode after a 40-token prompt: both ways of reading the context match HF."""
    ours, hf, kv = build(tiny_model_dirs[arch])
    ids = torch.randint(0, 49152, (41,), generator=torch.Generator().manual_seed(3)).tolist()
    ref = reference(hf, ids)
    run(ours, kv, [Span(ids[:40], 0, blocks, [39])])
    batch = ModelRunner(ours, kv, BS, "gather").prepare([Span(ids[40:], 40, blocks, [0])])
    assert (batch.attention.groups[0].kv_start is not None) == (blocks == [4, 5, 6, 7])
    with torch.inference_mode():
        got = ours.forward(batch, kv)
    torch.testing.assert_close(got[0], ref[40], atol=ATOL, rtol=1e-4)


def test_one_token_decode_gives_the_same_logits_over_consecutive_and_scattered_blocks(tiny_model_dirs):
    """The view of the pool and the gathered copy hold the same keys: a decode step's logits agree."""
    ours, _, kv = build(tiny_model_dirs["qwen2"])
    ids = torch.randint(0, 49152, (41,), generator=torch.Generator().manual_seed(8)).tolist()
    got = []
    for blocks in ([4, 5, 6, 7], [9, 2, 6, 0]):
        run(ours, kv, [Span(ids[:40], 0, blocks, [])])
        got.append(run(ours, kv, [Span(ids[40:], 40, blocks, [0])]))
    torch.testing.assert_close(got[0], got[1], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_one_query_attention_is_softmax_attention_with_grouped_heads(dtype):
    """9 query heads over 3 KV heads, 300 keys, K/V a strided view as the pool gives them: the matmul path
    (float32) and SDPA (bf16) both match attention written out with every KV head repeated."""
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(1, 9 * 64, generator=gen).to(dtype) / 8
    pool_k, pool_v = (torch.randn(3, 500, 64, generator=gen).to(dtype) for _ in range(2))
    kg, vg = pool_k.narrow(1, 100, 300), pool_v.narrow(1, 100, 300)
    got = one_query_attention(q, kg, vg)
    qh = q.float().view(9, 1, 64)
    kh, vh = (t.float().repeat_interleave(3, dim=0) for t in (kg, vg))
    ref = (qh @ kh.transpose(1, 2)).softmax(-1) @ vh
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(got.float(), ref.view(1, -1), atol=tol, rtol=tol)


@pytest.mark.parametrize("shape", [(1, 576), (7, 1536), (5, 12, 64)], ids=["decode", "rows", "heads"])
def test_rms_norm_is_torch_rms_norm_bit_for_bit(shape):
    gen = torch.Generator().manual_seed(4)
    for scale in (1e-3, 1.0, 1e3):
        x = torch.randn(shape, generator=gen) * scale
        w = torch.randn(shape[-1], generator=gen)
        assert torch.equal(rms_norm(x, w, 1e-5), F.rms_norm(x, shape[-1:], w, 1e-5))
        assert torch.equal(rms_norm(x, None, 1e-6), F.rms_norm(x, shape[-1:], None, 1e-6))
        xb, wb = x.bfloat16(), w.bfloat16()  # other dtypes: torch's own
        assert torch.equal(rms_norm(xb, wb, 1e-5), F.rms_norm(xb, shape[-1:], wb, 1e-5))


def test_a_long_pass_runs_its_mlp_in_row_chunks_and_still_matches_hf(tiny_model_dirs, monkeypatch):
    """A pass longer than MLP_CHUNK_ROWS runs the MLP a chunk of rows at a time (bounded intermediates):
    every row, the last partial chunk's too, as HF computes it."""
    monkeypatch.setattr("deltaserve.engine.model.MLP_CHUNK_ROWS", 16)
    ours, hf, kv = build(tiny_model_dirs["qwen2"])
    ids = torch.randint(0, 49152, (70,), generator=torch.Generator().manual_seed(4)).tolist()
    got = run(ours, kv, [Span(ids, 0, [5, 3, 9, 1, 7], list(range(70)))])
    torch.testing.assert_close(got, reference(hf, ids), atol=ATOL, rtol=1e-4)
