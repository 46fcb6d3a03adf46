"""The CPU attention kernels' long spans (prefill chunks) in the shape's long_span_dtype: a float32 KV cache
on a CPU with native bf16 matmuls runs its prefill SDPA in bf16 (a third of the time on an AMX Xeon); every
other row keeps the cache's float32."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from deltaserve.engine.attention.cpu import CpuAttentionPlan
from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.forward_batch import Span, flatten
from deltaserve.engine.loader import load_model
from deltaserve.engine.model import LlamaModel
from deltaserve.engine.quant import dynamic_int8_works, fast_bf16
from deltaserve.testing.tiny_model import make_tiny_model_dir

BS = 16
CPU = torch.device("cpu")
HEADS, KV_HEADS, HEAD_DIM = 4, 2, 8
# a fresh prompt, a long chunk over cached context (SDPA's masked kernel), batch decode and a verify span
SPANS = [
    Span(list(range(1, 200)), 0, list(range(9, 22)), [198]),
    Span(list(range(300, 450)), 40, [0, 1, 2, 3, 4, 5, 6, 7, 8, 22, 23, 24], [149]),
    Span([7], 70, [30, 25, 26, 27, 28], [0]),
    Span([5, 6, 7, 8], 33, [40, 41, 50], [0, 1, 2, 3]),
]


def _attend(long_span_dtype, q, k, v, k_cache, v_cache, offsets):
    shape = AttentionShape(HEADS, KV_HEADS, HEAD_DIM, None, long_span_dtype)
    return CpuAttentionPlan(shape, SPANS, offsets, BS, CPU).attend(q, k, v, k_cache, v_cache)


def test_long_spans_run_in_bf16_over_a_float32_cache_and_the_rest_stays_float32(monkeypatch):
    flat = flatten(SPANS, BS, 4096)
    rows, slots = len(flat.ids), 64 * BS
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(rows, h, HEAD_DIM, generator=g) for h in (HEADS, KV_HEADS, KV_HEADS))
    k_cache, v_cache = (torch.randn(KV_HEADS, slots, HEAD_DIM, generator=g) for _ in range(2))
    sdpa_dtypes = []
    sdpa = F.scaled_dot_product_attention

    def recorded(query, key, value, **kwargs):
        sdpa_dtypes.append((query.dtype, key.dtype, value.dtype))
        return sdpa(query, key, value, **kwargs)

    monkeypatch.setattr(F, "scaled_dot_product_attention", recorded)
    exact = _attend(None, q, k, v, k_cache, v_cache, flat.offsets)
    assert sdpa_dtypes == [(torch.float32,) * 3] * 2  # the two long spans
    sdpa_dtypes.clear()
    mixed = _attend(torch.bfloat16, q, k, v, k_cache, v_cache, flat.offsets)
    assert sdpa_dtypes == [(torch.bfloat16,) * 3] * 2
    assert mixed.dtype == torch.float32
    long_rows = sum(len(s.token_ids) for s in SPANS[:2])
    torch.testing.assert_close(mixed[:long_rows], exact[:long_rows], atol=2e-2, rtol=2e-2)
    assert torch.equal(mixed[long_rows:], exact[long_rows:])  # decode and verify rows: float32 as before


@pytest.mark.skipif(not dynamic_int8_works(), reason="w8a8 needs fbgemm (x86)")
def test_a_float32_cache_prefills_in_bf16_only_where_bf16_is_native(tmp_path):
    loaded = load_model(str(make_tiny_model_dir(tmp_path / "qwen2", "qwen2")))
    w8a8 = LlamaModel(loaded.hf_config, dict(loaded.weights), torch.bfloat16, CPU, 512, quant="w8a8")
    assert w8a8.kv_dtype == torch.float32  # the layers hand attention float32 and the heads are small
    assert w8a8.attention_shape.long_span_dtype == (torch.bfloat16 if fast_bf16(CPU) else None)
    plain = LlamaModel(loaded.hf_config, dict(loaded.weights), torch.float32, CPU, 512)
    assert plain.attention_shape.long_span_dtype is None  # the float32 reference stays float32
