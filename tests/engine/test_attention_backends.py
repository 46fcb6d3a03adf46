"""The flex_attention backend (the CUDA path) checked on CPU: its block mask covers every key a query may
see, the forward runs on the meta device with every kernel input on the model's device, it never calls SDPA,
and both backends agree with transformers under a sliding window."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from transformers import AutoModelForCausalLM

from deltaserve.engine.attention import flex as flex_module
from deltaserve.engine.attention.flex import QUERY_BLOCK, FlexAttentionPlan
from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.forward_batch import Span, flatten
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.loader import load_model
from deltaserve.engine.model import LlamaModel
from deltaserve.engine.model_runner import ModelRunner
from deltaserve.testing.tiny_model import make_tiny_model_dir

BS = 16
CPU = torch.device("cpu")
# every path of the flat batch at once: a fresh prompt longer than a query block, a long chunk over cached
# context, batch decode, a verify span
MIXED = [
    Span(list(range(1, 200)), 0, [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21], [198]),
    Span(list(range(300, 450)), 40, [0, 1, 2, 3, 4, 5, 6, 7, 8, 22, 23, 24], [149]),
    Span([7], 70, [30, 25, 26, 27, 28], [0]),
    Span([8], 3, [31], [0]),
    Span([5, 6, 7, 8], 33, [40, 41, 50], [0, 1, 2, 3]),
]


def _listed(plan: FlexAttentionPlan, rows: int, slots: int) -> torch.Tensor:
    """[rows, slots] True where the block mask sends the kernel to a key: the key's region is among the
    first kv_num_blocks entries of kv_indices for the query's block."""
    bm = plan.block_mask
    kv_block = bm.BLOCK_SIZE[1]
    regions = torch.zeros(bm.kv_num_blocks.shape[-1], -(-slots // kv_block), dtype=torch.bool)
    for qb, n in enumerate(bm.kv_num_blocks[0, 0].tolist()):
        regions[qb, bm.kv_indices[0, 0, qb, :n].long()] = True
    return regions[torch.arange(rows) // QUERY_BLOCK][:, torch.arange(slots) // kv_block]


@pytest.mark.parametrize("window", [None, 20])
def test_block_mask_lists_every_region_a_query_sees(window):
    """Eager flex applies only the mask; the compiled kernels visit only the listed regions. So the listed
    regions must cover every visible key, or a GPU run silently drops keys the CPU tests saw."""
    shape = AttentionShape(4, 2, 8, window)
    flat = flatten(MIXED, BS, 4096)
    slots = 64 * BS
    plan = FlexAttentionPlan(shape, MIXED, flat.offsets, BS, slots, torch.device("cpu"), compiled=False)
    rows = len(flat.ids)
    q = torch.arange(rows)[:, None]
    kv = torch.arange(slots)[None, :]
    visible = plan.block_mask.mask_mod(0, 0, q, kv)
    listed = _listed(plan, rows, slots)
    assert visible.any(dim=1).all()  # every query sees at least itself
    assert not (visible & ~listed).any()
    # and the listing is tight where it matters: decode rows' blocks list few regions, not the pool
    assert plan.block_mask.kv_num_blocks.max() < slots // plan.block_mask.BLOCK_SIZE[1]


@pytest.fixture(scope="module")
def qwen2(tmp_path_factory):
    return load_model(str(make_tiny_model_dir(tmp_path_factory.mktemp("m") / "qwen2", "qwen2")))


@pytest.mark.parametrize("window", [None, 24], ids=["full", "sliding window"])
def test_flex_forward_runs_on_the_meta_device_with_every_kernel_input_there(tmp_path, monkeypatch, window):
    """The CUDA path's forward with no CPU op in it: on the meta device any CPU tensor in an op fails."""
    arch = "mistral" if window else "qwen2"
    loaded = load_model(str(make_tiny_model_dir(tmp_path / arch, arch, sliding_window=window) if window
                            else make_tiny_model_dir(tmp_path / arch, arch)))
    meta = torch.device("meta")
    weights = {k: v.to(meta) for k, v in loaded.weights.items()}
    model = LlamaModel(loaded.hf_config, weights, torch.bfloat16, meta, 512, quant="none", head_quant="none")
    assert model.sliding_window == window
    kv = KVCache(model.num_layers, 64, BS, model.num_kv_heads, model.head_dim, torch.bfloat16, meta)
    calls = []

    def kernel(q, k, v, block_mask, scale, enable_gqa):  # flex itself refuses meta tensors: record instead
        tensors = [q, k, v, block_mask.kv_num_blocks, block_mask.kv_indices]
        calls.append({t.device.type for t in tensors})
        assert q.dtype == k.dtype == v.dtype == torch.bfloat16 and enable_gqa and scale == 1.0
        return torch.empty(q.shape, dtype=q.dtype, device=q.device)

    monkeypatch.setattr(flex_module, "flex_attention", kernel)
    logits = ModelRunner(model, kv, BS, "flex").logits(MIXED)
    assert logits.device == meta and logits.shape == (8, model.vocab_size)
    assert calls == [{"meta"}] * model.num_layers


def test_flex_path_never_calls_sdpa(qwen2, monkeypatch):
    """On CUDA, SDPA with a mask plus GQA lands on its math backend; the flex path must not call it at all."""
    def refuse(*args, **kwargs):
        raise AssertionError("scaled_dot_product_attention called on the flex path")

    monkeypatch.setattr(F, "scaled_dot_product_attention", refuse)
    weights = dict(qwen2.weights)
    model = LlamaModel(qwen2.hf_config, weights, torch.float32, "cpu", 512)
    kv = KVCache(model.num_layers, 64, BS, model.num_kv_heads, model.head_dim, torch.float32, CPU)
    assert ModelRunner(model, kv, BS, "flex").logits(MIXED).isfinite().all()


@pytest.mark.parametrize("backend", ["gather", "flex"])
def test_sliding_window_matches_transformers(tmp_path, backend):
    path = make_tiny_model_dir(tmp_path / "mistral", "mistral", sliding_window=24)
    loaded = load_model(str(path))
    ours = LlamaModel(loaded.hf_config, loaded.weights, torch.float32, "cpu", 512)
    hf = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    kv = KVCache(ours.num_layers, 32, BS, ours.num_kv_heads, ours.head_dim, torch.float32, CPU)
    runner = ModelRunner(ours, kv, BS, backend)
    ids = torch.randint(0, 49152, (70,), generator=torch.Generator().manual_seed(7)).tolist()
    with torch.inference_mode():
        ref = hf(torch.tensor([ids])).logits[0].float()
    blocks = [6, 2, 9, 4, 11]
    first = runner.logits([Span(ids[:50], 0, blocks, list(range(50)))])
    chunk = runner.logits([Span(ids[50:66], 50, blocks, list(range(16)))])
    decode = [runner.logits([Span([ids[p]], p, blocks, [0])]) for p in range(66, 70)]
    got = torch.cat([first, chunk, *decode])
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)
