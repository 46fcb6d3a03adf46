"""Weight-only int4/int8 linears: the kernels against their dequantized weights, and whole engines against
a transformers model whose projections hold exactly those dequantized weights."""

from __future__ import annotations

import shutil

import pytest
import torch
import torch.nn.functional as F
from pydantic import ValidationError
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from deltaserve.engine import Engine, EngineConfig, EngineError, SamplingParams
from deltaserve.engine import model as model_module
from deltaserve.engine.linear import DenseLinear
from deltaserve.engine.model import FP32_KV_MAX_HEAD_DIM, cpu_has_amx
from deltaserve.engine.quant import (
    QuantizedLinear,
    default_dtype,
    dequantize_int4,
    dynamic_int8_mm,
    dynamic_int8_works,
    fast_bf16,
    head_quant_for,
    int4_group_for,
    make_linear,
    pack_dynamic_int8,
    packed_weight_calls,
    preferred_quant,
    quantize_int4,
    quantize_int8,
    resolve_quant,
    weight_levels,
)

CPU = torch.device("cpu")


def weights(n: int, k: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, k, generator=torch.Generator().manual_seed(seed)) * 0.1


def kernel_reference(w: torch.Tensor, mode: str, dtype: torch.dtype, group: int = 32) -> torch.Tensor:
    """The weight the kernel multiplies by: quantized, with scales (and zeros) rounded to `dtype`."""
    if mode == "int8":
        q, s = quantize_int8(w)
        return q.float() * s.to(dtype).float()[:, None]
    q, s, z = quantize_int4(w, group)
    return dequantize_int4(q, s.to(dtype), z.to(dtype))


@pytest.mark.parametrize("mode", ["int4", "int8"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [False, True])
def test_quantized_linear_matches_its_dequantized_weight(mode, dtype, bias):
    w = weights(48, 96)
    b = torch.randn(48, generator=torch.Generator().manual_seed(1)).to(dtype) if bias else None
    lin = QuantizedLinear(w, b, mode, dtype, group_size=32, keep_dense=False)
    x = torch.randn(3, 96, generator=torch.Generator().manual_seed(2)).to(dtype)
    got = lin(x)
    assert got.dtype == dtype and got.shape == (3, 48)
    ref = F.linear(x.float(), kernel_reference(w, mode, dtype), None if b is None else b.float())
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=2e-2, rtol=1e-2)  # bf16 output
    torch.testing.assert_close(got.float(), ref, **tol)


@pytest.mark.parametrize("mode", ["int4", "int8"])
def test_many_rows_run_the_dense_copy_of_the_same_weight(mode):
    w = weights(64, 64, seed=3)
    lin = QuantizedLinear(w, None, mode, torch.float32, max_rows=4)
    assert isinstance(lin.dense, DenseLinear)
    x = torch.randn(9, 64, generator=torch.Generator().manual_seed(4))
    dense = lin(x)  # 9 rows > max_rows: the dense dequantized copy
    lin.max_rows = 100
    quantized = lin(x)  # the quantized kernel
    torch.testing.assert_close(dense, quantized, atol=1e-4, rtol=1e-4)
    reference = F.linear(x, kernel_reference(w, mode, torch.float32))
    torch.testing.assert_close(dense, reference, atol=1e-4, rtol=1e-4)


def test_int4_rounding_error_is_at_most_half_a_step():
    w = weights(32, 128, seed=5)
    q, s, z = quantize_int4(w, 32)
    assert q.dtype == torch.int32 and int(q.min()) >= 0 and int(q.max()) <= 15
    err = (dequantize_int4(q, s, z) - w).abs().reshape(32, 4, 32)
    assert bool((err <= s[..., None] / 2 + 1e-6).all())


def test_weights_already_on_a_4bit_grid_come_back_exactly():
    """A GGUF Q4 block: 16 levels between its min and max. Requantizing it loses nothing."""
    gen = torch.Generator().manual_seed(6)
    levels = torch.randint(0, 16, (16, 64), generator=gen).float()
    levels[:, ::32] = 0  # every group uses its lowest and highest level
    levels[:, 1::32] = 15
    step = torch.rand(16, 2, 1, generator=gen) * 0.01 + 0.001
    low = torch.randn(16, 2, 1, generator=gen) * 0.05
    w = (low + levels.view(16, 2, 32) * step).view(16, 64)
    q, s, z = quantize_int4(w, 32)
    torch.testing.assert_close(dequantize_int4(q, s, z), w, atol=1e-6, rtol=0)


def test_int8_is_symmetric_per_output_channel():
    w = weights(8, 40, seed=7)
    q, s = quantize_int8(w)
    assert q.dtype == torch.int8 and s.shape == (8,)
    torch.testing.assert_close(s, w.abs().amax(1) / 127)
    assert bool(((q.float() * s[:, None] - w).abs() <= s[:, None] / 2 + 1e-7).all())


def test_group_size_and_fallbacks():
    assert int4_group_for(64, 576, 128) == 64  # SmolLM2's 576 inputs: the largest group that divides
    assert int4_group_for(64, 1536, 128) == 128
    assert int4_group_for(40, 64, 32) is None  # the int4 packing needs out_features % 16 == 0
    assert int4_group_for(64, 48, 32) is None
    odd = make_linear(weights(40, 64), None, torch.float32, "int4", 32, prepack=False)
    assert isinstance(odd, QuantizedLinear) and odd.mode == "int8"
    assert isinstance(make_linear(weights(16, 32), None, torch.float32, "none", 32, False), DenseLinear)
    with pytest.raises(EngineError):
        QuantizedLinear(weights(40, 64), None, "int4", torch.float32)


def test_resolve_quant():
    fastest = preferred_quant(CPU)
    assert fastest == ("w8a8" if dynamic_int8_works() else "int4")  # x86 (fbgemm) or not
    assert resolve_quant("auto", CPU, torch.bfloat16) == fastest
    assert resolve_quant("auto", CPU, torch.float32) == "none"  # a float32 asked for stays the reference
    assert resolve_quant("auto", CPU, torch.float32, dtype_chosen=True) == fastest  # default_dtype's float32
    assert resolve_quant("auto", torch.device("cuda"), torch.bfloat16) == "none"
    assert resolve_quant("int8", CPU, torch.float32) == "int8"
    with pytest.raises(EngineError, match="CPU"):
        resolve_quant("int4", torch.device("cuda"), torch.bfloat16)
    with pytest.raises(EngineError):
        resolve_quant("int3", CPU, torch.bfloat16)


def test_default_dtype_follows_native_bf16():
    assert default_dtype(CPU) == (torch.bfloat16 if fast_bf16(CPU) else torch.float32)
    cuda = torch.device("cuda")
    assert default_dtype(cuda) == (torch.bfloat16 if fast_bf16(cuda) else torch.float16)


@pytest.mark.parametrize("bf16", [True, False])
def test_cuda_takes_bf16_only_where_it_is_native(monkeypatch, bf16):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: bf16)
    assert default_dtype(torch.device("cuda")) == (torch.bfloat16 if bf16 else torch.float16)


def test_default_kv_pool_holds_as_many_tokens_in_float32():
    """float32 is the default where bf16 is emulated: the default pool holds the same tokens, not half."""
    from deltaserve.engine.kv_cache import bytes_per_block, default_num_blocks

    blocks = {dt: default_num_blocks(bytes_per_block(28, 16, 2, 128, dt), CPU, None, dt)
              for dt in (torch.bfloat16, torch.float32)}
    assert blocks[torch.float32] == blocks[torch.bfloat16] > 0
    assert default_num_blocks(bytes_per_block(28, 16, 2, 128, torch.float32), CPU, 768, torch.float32) \
        == blocks[torch.bfloat16] // 2  # a budget asked for is bytes, whatever the dtype


needs_fbgemm = pytest.mark.skipif(not dynamic_int8_works(), reason="fbgemm's int8 GEMM is not here")


@needs_fbgemm
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("rows", [6, 40])  # verify spans and decode batches; prefill chunks
def test_w8a8_quantizes_each_row_alone(dtype, rows):
    """Each row's activations are quantized on their own range: close to the float product of the int8
    weights, the same whatever rows share the call (integer accumulation is exact), even beside a row
    1000x larger; a row of zeros gives the bias."""
    w, bias = weights(96, 64), torch.randn(96).to(dtype)
    x = torch.randn(rows, 64, generator=torch.Generator().manual_seed(1))
    x[2] *= 1000
    x[4] = 0
    x = x.to(dtype)
    q, s = quantize_int8(w, weight_levels())
    ref = x.float() @ (q.float() * s[:, None]).t() + bias.float()
    lin = make_linear(w, bias, dtype, "w8a8", 32, prepack=False)
    assert lin.dynamic and lin.dense is None  # no dense copy where bf16 is not prepacked
    assert lin.nbytes() == 96 * 64 + lin.scales.nbytes + bias.nbytes
    got = lin(x)
    assert got.dtype == dtype
    for i in range(rows):
        assert (got[i].float() - ref[i]).norm() <= 0.03 * ref[i].norm()
    assert torch.equal(got[4], bias)
    assert torch.equal(got, torch.cat([lin(x[:3]), lin(x[3:])]))  # other rows beside it: the same GEMM
    # A row alone takes fbgemm's own dynamic linear, on the same grid: the same levels, except that a value
    # within float rounding of the midpoint between two levels may round the other way (one level in one
    # of 64 inputs moves this row's result ~2e-3); bf16 output rounds on top.
    close = 0
    for i in range(rows):
        gap = (lin(x[i:i + 1])[0].float() - got[i].float()).norm() / (ref[i].norm() + 1)
        assert gap <= 1e-2
        close += bool(gap <= (1e-6 if dtype == torch.float32 else 1e-2))
    assert close >= 0.9 * rows


@needs_fbgemm
def test_int8_products_never_overflow_fbgemm():
    """The worst case for a saturating int8 dot product: every activation at its extreme (all 8 bits) and
    every weight at weight_levels()."""
    levels = weight_levels()
    assert levels in (63, 127)
    k = 256
    packed = pack_dynamic_int8(torch.full((16, k), levels, dtype=torch.int8), torch.ones(16))
    row_sums = torch.full((16,), float(levels * k))
    for rows in (1, 2):  # fbgemm's dynamic linear, and our scaled rows
        for sign in (1, -1):
            got = dynamic_int8_mm(sign * torch.ones(rows, k), packed, row_sums)
            torch.testing.assert_close(got, torch.full_like(got, sign * levels * k))


def test_w8a8_needs_fbgemm_and_a_cpu():
    if not dynamic_int8_works():
        with pytest.raises(EngineError, match="fbgemm"):
            resolve_quant("w8a8", CPU, torch.float32)
    else:
        assert resolve_quant("w8a8", CPU, torch.float32) == "w8a8"
    with pytest.raises(EngineError, match="CPU"):
        resolve_quant("w8a8", torch.device("cuda"), torch.bfloat16)


def test_head_quant():
    assert head_quant_for("none", "auto", CPU) == "none"
    assert head_quant_for("int4", "auto", CPU) == ("int8" if dynamic_int8_works() else "none")
    assert head_quant_for("int4", "int4", CPU) == "int4"
    assert head_quant_for("none", "none", torch.device("cuda")) == "none"
    with pytest.raises(EngineError, match="CPU"):
        head_quant_for("none", "int8", torch.device("cuda"))
    assert EngineConfig().quant_lm_head == "auto"
    assert EngineConfig(quant_lm_head=True).quant_lm_head == "int4"  # the field was a bool
    assert EngineConfig(quant_lm_head=False).quant_lm_head == "auto"
    with pytest.raises(ValidationError):
        EngineConfig(quant_lm_head="int2")


def test_config_fields():
    assert EngineConfig().quant == "auto"
    assert EngineConfig(quant="int8", quant_group_size=128).quant_group_size == 128
    with pytest.raises(ValidationError):
        EngineConfig(quant="int2")
    with pytest.raises(ValidationError):
        EngineConfig(quant_group_size=48)


# ---- whole engines ----------------------------------------------------------------------------------------


def dequantized_checkpoint(src, dst, mode: str):
    """A copy of the tiny checkpoint whose projection weights are replaced by what `mode` stores (fp32
    scales; q is scaled by 1/sqrt(16) in our fused qkv, a power of two, so quantization commutes with it)."""
    shutil.copytree(src, dst)
    state = load_file(dst / "model.safetensors")
    for name, w in state.items():
        if name.endswith("_proj.weight"):
            state[name] = kernel_reference(w.float(), mode, torch.float32).contiguous()
    save_file(state, dst / "model.safetensors")
    return dst


@pytest.mark.parametrize(("arch", "mode"), [("llama", "int4"), ("qwen2", "int4"), ("llama", "int8")])
def test_engine_matches_hf_on_the_dequantized_weights(tiny_model_dirs, tmp_path, arch, mode):
    eng = Engine.from_pretrained(str(tiny_model_dirs[arch]), dtype="float32", quant=mode, num_blocks=64,
                                 speculative=False, device="cpu", quant_lm_head="none")
    kinds = {lin.mode for lin in eng.model.linears()[:-1]}
    assert kinds == {mode} and isinstance(eng.model.lm_head, DenseLinear)  # the head as HF has it
    ref_dir = dequantized_checkpoint(tiny_model_dirs[arch], tmp_path / "ref", mode)
    hf = AutoModelForCausalLM.from_pretrained(ref_dir, dtype=torch.float32).eval()
    gen = torch.Generator().manual_seed(8)
    for n in (7, 21):
        ids = torch.randint(0, 49152, (n,), generator=gen).tolist()
        out = eng.generate(ids, SamplingParams(max_tokens=12, ignore_eos=True))[0]
        with torch.inference_mode():
            ref = hf.generate(torch.tensor([ids]), max_new_tokens=12, min_new_tokens=12, do_sample=False,
                              pad_token_id=0)[0, n:].tolist()
        assert out.token_ids == ref


@pytest.mark.parametrize("mode", ["int4", "int8"])
def test_bf16_decode_kernels_agree_with_the_dense_dequantized_path(tiny_model_dirs, mode):
    """bf16 with prepacked dense copies: a decode step's logits whether every call takes the quantized kernel
    or the dense copy of its dequantized weight (prefill, speculation and batches take the dense one), within
    bf16 noise (the dense copy holds the dequantized weight rounded to bf16)."""
    from deltaserve.engine.forward_batch import Span

    eng = Engine.from_pretrained(str(tiny_model_dirs["qwen2"]), dtype="bfloat16", quant=mode, num_blocks=64,
                                 speculative=False, enable_prefix_caching=False, device="cpu")
    m = eng.model
    quantized = [lin for lin in m.linears() if isinstance(lin, QuantizedLinear)]
    assert quantized

    def decode_logits(max_rows: int) -> torch.Tensor:
        for lin in quantized:
            lin.max_rows = max_rows
        ids = list(range(100, 141))
        with torch.inference_mode():
            eng.runner.logits([Span(ids[:-1], 0, [0, 1, 2], [])])
            return eng.runner.logits([Span(ids[-1:], 40, [0, 1, 2], [0])])[0]

    kernel, dense = decode_logits(10**6), decode_logits(-1)
    diff = (kernel - dense).abs()
    assert 0 < diff.max() < 0.3 and diff.mean() < 0.05, (diff.max(), diff.mean())  # > 0: two paths ran
    assert kernel.argmax() == dense.argmax()


def test_default_cpu_engine_takes_the_fastest_precision_here(tiny_model_dirs):
    path = str(tiny_model_dirs["llama"])
    eng = Engine.from_pretrained(path, num_blocks=16, speculative=False, device="cpu")
    assert eng.dtype == default_dtype(CPU) and eng.quant == preferred_quant(CPU)
    assert f"quant={eng.quant}" in repr(eng)
    head = eng.model.lm_head
    if dynamic_int8_works():  # the head int8 with 8-bit activations
        assert isinstance(head, QuantizedLinear) and head.mode == "int8" and head.dynamic
    fp32 = Engine.from_pretrained(path, dtype="float32", num_blocks=16, device="cpu")
    assert fp32.quant == "none"


@needs_fbgemm
def test_w8a8_engine_agrees_with_its_float_weights(tiny_model_dirs):
    """w8a8 on every projection: logits over a prompt close to the same int8 weights with float activations
    (only the activations' rounding differs); prefill, decode and batches run."""
    from deltaserve.engine.forward_batch import Span

    path = str(tiny_model_dirs["qwen2"])
    kw = dict(dtype="float32", num_blocks=64, speculative=False, device="cpu", quant_lm_head="none",
              enable_prefix_caching=False)
    eng = Engine.from_pretrained(path, quant="w8a8", **kw)
    assert {(lin.mode, lin.dynamic) for lin in eng.model.linears()[:-1]} == {("int8", True)}
    ref = Engine.from_pretrained(path, quant="int8", **kw)
    gen = torch.Generator().manual_seed(9)
    prompts = [torch.randint(0, 49152, (n,), generator=gen).tolist() for n in (9, 30, 17)]

    def logits(e: Engine) -> torch.Tensor:
        with torch.inference_mode():
            return e.runner.logits([Span(prompts[1], 0, [0, 1], list(range(30)))])

    ours, theirs = logits(eng), logits(ref)
    # a random tiny model's errors add up over its layers (7.5% with 7-bit activations); a wrong row scale
    # or zero point is off by 100%
    assert 0 < (ours - theirs).norm() < 0.15 * theirs.norm()
    decoded = eng.generate(prompts, SamplingParams(max_tokens=16, ignore_eos=True))
    assert [len(o.token_ids) for o in decoded] == [16, 16, 16]


@needs_fbgemm
@pytest.mark.parametrize("rows", [1, 6])
def test_packed_weight_calls_change_nothing_but_the_overhead(rows):
    """Inside the context torch skips probing fbgemm's packed weights for __torch_function__: same results."""
    lin = make_linear(weights(96, 64), torch.randn(96), torch.float32, "w8a8", 32, prepack=False)
    x = torch.randn(rows, 64, generator=torch.Generator().manual_seed(2))
    outside = lin(x)
    with packed_weight_calls():
        assert torch.equal(lin(x), outside)


@pytest.mark.parametrize("quant", ["w8a8", "int4", "none"])
def test_quantized_cpu_models_keep_the_residual_stream_in_float32(tiny_model_dirs, quant):
    """Quantized on CPU, the residual stream and its norms are float32 and each linear gets its kernel's input
    dtype (fbgemm's float32, the int4 kernel's bf16); the KV cache is float32 where the linears hand attention
    float32 and the heads are small (w8a8 here) on a CPU without AMX, else bf16; unquantized bf16 stays bf16
    (HF's numerics)."""
    if quant == "w8a8" and not dynamic_int8_works():
        pytest.skip("fbgemm does not run here")
    eng = Engine.from_pretrained(str(tiny_model_dirs["qwen2"]), dtype="bfloat16", quant=quant, num_blocks=16,
                                 speculative=False, device="cpu")
    m = eng.model
    assert (m.act_dtype, m.layer_dtype) == {"w8a8": (torch.float32, torch.float32),
                                            "int4": (torch.float32, torch.bfloat16),
                                            "none": (torch.bfloat16, torch.bfloat16)}[quant]
    assert m.layers[0].in_norm.dtype == m.final_norm.dtype == m.act_dtype
    assert m.head_dim <= FP32_KV_MAX_HEAD_DIM
    float32_kv = quant == "w8a8" and not cpu_has_amx()
    assert eng.kv.k_blocks.dtype == m.kv_dtype == (torch.float32 if float32_kv else torch.bfloat16)
    out = eng.generate(list(range(5, 30)), SamplingParams(max_tokens=6, ignore_eos=True))[0]
    assert len(out.token_ids) == 6


@pytest.mark.parametrize("amx", [False, True], ids=["without AMX", "with AMX"])
def test_small_heads_keep_a_float32_cache_only_on_cpus_without_amx(tiny_model_dirs, monkeypatch, amx):
    """AMX runs torch's bf16 attention on its tiles, so there a bf16 cache (half the bytes to read) wins;
    without it bf16 attention over small heads is the slower one."""
    if not dynamic_int8_works():
        pytest.skip("fbgemm does not run here")
    monkeypatch.setattr(model_module, "cpu_has_amx", lambda: amx)
    eng = Engine.from_pretrained(str(tiny_model_dirs["qwen2"]), dtype="bfloat16", quant="w8a8", num_blocks=16,
                                 speculative=False, device="cpu")
    assert eng.model.kv_dtype == (torch.bfloat16 if amx else torch.float32)
    out = eng.generate(list(range(5, 30)), SamplingParams(max_tokens=6, ignore_eos=True))[0]
    assert len(out.token_ids) == 6
