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
from deltaserve.engine.linear import DenseLinear
from deltaserve.engine.quant import (
    QuantizedLinear,
    dequantize_int4,
    dynamic_int8_works,
    head_quant_for,
    int4_group_for,
    make_linear,
    quantize_int4,
    quantize_int8,
    resolve_quant,
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
    assert resolve_quant("auto", CPU, torch.bfloat16) == "int4"
    assert resolve_quant("auto", CPU, torch.float32) == "none"  # fp32 stays the reference mode
    assert resolve_quant("auto", torch.device("cuda"), torch.bfloat16) == "none"
    assert resolve_quant("int8", CPU, torch.float32) == "int8"
    with pytest.raises(EngineError, match="CPU"):
        resolve_quant("int4", torch.device("cuda"), torch.bfloat16)
    with pytest.raises(EngineError):
        resolve_quant("int3", CPU, torch.bfloat16)


needs_fbgemm = pytest.mark.skipif(not dynamic_int8_works(), reason="fbgemm's dynamic int8 linear is not here")


@needs_fbgemm
def test_dynamic_int8_rows_are_quantized_alone():
    """One row runs fbgemm with 8-bit activations, close to the float product; several rows go to the dense
    copy, or (without one) row by row, so a row's result never depends on the rows batched with it."""
    w, bias = weights(96, 64), torch.randn(96).to(torch.bfloat16)
    x = torch.randn(3, 64, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    ref = x.float() @ w.t() + bias.float()
    lin = make_linear(w, bias, torch.bfloat16, "int8", 32, prepack=False, dynamic=True)
    assert lin.dynamic and lin.nbytes() == 96 * 64 + lin.scales.nbytes + bias.nbytes
    one = lin(x[:1]).float()
    assert (one - ref[:1]).norm() / ref[:1].norm() < 0.03
    dense = lin.dense(x).float()
    assert torch.equal(lin(x).float(), dense)  # many rows: the dense copy
    lin.dense = None
    alone = torch.cat([lin(x[i:i + 1]) for i in range(3)])
    assert torch.equal(lin(x), alone)


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
    from deltaserve.engine.model import Span

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
            m.forward(m.prepare([Span(ids[:-1], 0, [0, 1, 2], [])], 16), eng.kv)
            return m.forward(m.prepare([Span(ids[-1:], 40, [0, 1, 2], [0])], 16), eng.kv)[0]

    kernel, dense = decode_logits(10**6), decode_logits(-1)
    diff = (kernel - dense).abs()
    assert 0 < diff.max() < 0.3 and diff.mean() < 0.05, (diff.max(), diff.mean())  # > 0: two paths ran
    assert kernel.argmax() == dense.argmax()


def test_default_bf16_cpu_engine_is_int4(tiny_model_dirs):
    path = str(tiny_model_dirs["llama"])
    eng = Engine.from_pretrained(path, num_blocks=16, speculative=False, device="cpu")
    assert eng.quant == "int4" and "quant=int4" in repr(eng)
    head = eng.model.lm_head
    if dynamic_int8_works():  # the head int8 with 8-bit activations
        assert isinstance(head, QuantizedLinear) and head.mode == "int8" and head.dynamic
    fp32 = Engine.from_pretrained(path, dtype="float32", num_blocks=16, device="cpu")
    assert fp32.quant == "none"
