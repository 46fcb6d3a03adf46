"""Weight-only quantized linears on CPU, run by torch's own kernels.

- int4: groups of `group_size` input features share a scale and a zero point (asymmetric min/max
  rounding), the layout of `torch.ops.aten._weight_int4pack_mm_for_cpu`: w = (q - 8) * scale + zero,
  q in 0..15. Group 32 is the block of GGUF's Q4_0/Q4_1/Q4_K, so a 4-bit GGUF comes through almost
  unchanged (its blocks already hold 16 levels between their min and max).
- int8: one symmetric scale per output channel, `torch.ops.aten._weight_int8pack_mm`; with `dynamic`, a
  single-row call instead quantizes its activations to 8 bits on the fly and runs fbgemm's int8 GEMM
  (`torch.ops.quantized.linear_dynamic`, VNNI): 2.1x faster than the weight-only kernel on the 1.5B model's
  LM head (9.7 vs 20.2 ms on 2 AVX-512 cores) and 1.6x on its layers, which makes an int8 head as fast as an
  int4 one at a seventh of the error (1.1% vs 7.9% relative on random weights).

Batch-1 decode reads every weight once per token, so it runs at memory bandwidth and the 2-4x smaller
weights are 2-4x less to read. Those kernels are slow for many rows (2-3x slower than oneDNN's bf16 matmul
for a 2,000-token prefill chunk), so a QuantizedLinear keeps a dense copy of its *dequantized* weight and
hands calls of more than `max_rows` rows to it: prefill keeps bf16 speed and both paths compute the same
model. Scales and zeros are stored in the activation dtype (the kernels require it).
"""

from __future__ import annotations

import functools
import logging
import warnings
from typing import Literal

import torch

from deltaserve.engine.errors import EngineError
from deltaserve.engine.linear import DenseLinear

log = logging.getLogger(__name__)

QuantMode = Literal["none", "int8", "int4"]
QUANT_MODES = ("none", "int8", "int4")
HeadQuant = Literal["auto", "none", "int8", "int4"]
INT4_GROUP_SIZES = (32, 64, 128, 256)  # what the CPU kernel accepts
INT4_N_MULTIPLE = 16  # the int4 packing needs out_features % 16 == 0
# Calls with more rows than this go to the dense dequantized copy: the quantized kernels win at 1 row
# (decode) and lose from about 8 rows on (measured on a 2-core AVX-512 machine, 1.5B model shapes), so
# speculative verify spans (1 + 8 drafts) and prefill chunks run dense.
MAX_QUANT_ROWS = 4


def resolve_quant(quant: str, device: torch.device, dtype: torch.dtype) -> QuantMode:
    """'auto' -> int4 for bf16 on CPU (the serving default), none otherwise (fp32 is the reference
    mode; CUDA would need other packings). An explicit int4/int8 off CPU is refused."""
    if quant == "auto":
        return "int4" if device.type == "cpu" and dtype == torch.bfloat16 else "none"
    if quant not in QUANT_MODES:
        raise EngineError(f"unknown quant {quant!r}; choose auto, {', '.join(QUANT_MODES)}")
    if quant != "none" and device.type != "cpu":
        raise EngineError(f"quant={quant} runs torch's CPU kernels; use quant=none on {device.type}")
    return quant


def head_quant_for(quant: QuantMode, head: HeadQuant, device: torch.device) -> QuantMode:
    """The LM head's precision. "auto": none when the layers are not quantized, else int8 with dynamic
    activations where fbgemm runs (as fast as an int4 head and about as accurate as bf16; `bench accuracy`
    in the README has the figures), else dense."""
    if head == "auto":
        return "int8" if quant != "none" and dynamic_int8_works() else "none"
    if head != "none" and device.type != "cpu":
        raise EngineError(f"quant_lm_head={head} runs torch's CPU kernels; use none on {device.type}")
    return head


@functools.cache
def dynamic_int8_works() -> bool:
    """fbgemm's dynamic int8 linear is in this torch build and runs (x86 with AVX2 or better)."""
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        return False
    try:
        pack_dynamic_int8(torch.ones(8, 8, dtype=torch.int8), torch.ones(8), None)
    except RuntimeError:
        return False
    return True


def pack_dynamic_int8(q: torch.Tensor, scales: torch.Tensor, bias: torch.Tensor | None):
    """fbgemm's packed form of per-channel int8 weights q * scales (and a float32 bias)."""
    zero_points = torch.zeros(q.shape[0], dtype=torch.long)
    with warnings.catch_warnings():  # quantized tensors are deprecated; dynamic_int8_works() gates their use
        warnings.simplefilter("ignore", UserWarning)
        qw = torch._make_per_channel_quantized_tensor(q, scales.double(), zero_points, 0)
    engine = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"  # the packing follows the global engine; the call does not
    try:
        return torch.ops.quantized.linear_prepack(qw, None if bias is None else bias.float())
    finally:
        torch.backends.quantized.engine = engine


def quantize_int4(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q [N, K] int32 in 0..15, scales [N, K/g], zeros [N, K/g]) in float32, w ~ (q - 8) * scale + zero."""
    n, k = w.shape
    groups = w.float().reshape(n, k // group_size, group_size)
    lo, hi = groups.amin(-1, keepdim=True), groups.amax(-1, keepdim=True)
    scales = (hi - lo).clamp(min=1e-6) / 15
    q = ((groups - lo) / scales).round_().clamp_(0, 15).to(torch.int32).reshape(n, k)
    zeros = lo + 8 * scales
    return q, scales.reshape(n, -1), zeros.reshape(n, -1)


def dequantize_int4(q: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
    n, k = q.shape
    g = k // scales.shape[1]
    groups = (q.float().reshape(n, -1, g) - 8) * scales.float()[..., None] + zeros.float()[..., None]
    return groups.reshape(n, k)


def quantize_int8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(q [N, K] int8, scales [N]) in float32, w ~ q * scale."""
    w = w.float()
    scales = w.abs().amax(1).clamp(min=1e-8) / 127
    return (w / scales[:, None]).round_().clamp_(-128, 127).to(torch.int8), scales


def int4_group_for(n: int, k: int, group_size: int) -> int | None:
    """The largest accepted group size <= group_size that divides k, or None if int4 cannot take it."""
    if n % INT4_N_MULTIPLE:
        return None
    fits = [g for g in INT4_GROUP_SIZES if g <= group_size and k % g == 0]
    return max(fits) if fits else None


class QuantizedLinear:
    """y = x @ W.T + bias with W stored int4 or int8; more than max_rows rows go to `dense`, a DenseLinear
    of the same dequantized W (None: always the quantized kernel). A `dynamic` int8 linear holds fbgemm's
    packing instead of the weight-only kernel's: one row runs it, several go to `dense` (or row by row), so
    every row's activations are quantized alone and a batch never changes a request's result."""

    __slots__ = ("mode", "packed", "scales", "group_size", "bias", "dense", "max_rows", "dynamic",
                 "weight_bytes")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, mode: QuantMode, dtype: torch.dtype,
                 group_size: int = 32, keep_dense: bool = True, prepack: bool = False,
                 max_rows: int = MAX_QUANT_ROWS, dynamic: bool = False):
        n, k = weight.shape
        self.mode, self.bias, self.max_rows = mode, bias, max_rows
        self.dynamic = dynamic and mode == "int8"
        if self.dynamic:
            self.max_rows = 1
        if mode == "int4":
            group = int4_group_for(n, k, group_size)
            if group is None:
                raise EngineError(f"int4 needs out_features % {INT4_N_MULTIPLE} == 0 and in_features % 32 "
                                  f"== 0; got [{n}, {k}]")
            q, scales, zeros = quantize_int4(weight, group)
            self.group_size = group
            self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q, 1)
            # [K/g, N, 2]: a group's scale and zero side by side, the layout the kernel reads
            self.scales = torch.stack([scales, zeros], -1).transpose(0, 1).contiguous().to(dtype)
            dequantized = dequantize_int4(q, self.scales[..., 0].t(), self.scales[..., 1].t()) if keep_dense \
                else None
        elif mode == "int8":
            q, scales = quantize_int8(weight)
            self.group_size = 0
            self.packed, self.scales = q, scales.to(dtype)
            dequantized = q.float() * self.scales.float()[:, None] if keep_dense else None
            if self.dynamic:
                self.packed = pack_dynamic_int8(q, scales, bias)
        else:
            raise EngineError(f"QuantizedLinear takes int4 or int8, not {mode!r}")
        packed_bytes = self.packed.nbytes if mode == "int4" else n * k  # fbgemm's packing hides its size
        self.weight_bytes = packed_bytes + self.scales.nbytes
        self.dense = None if dequantized is None else DenseLinear(dequantized.to(dtype), bias, prepack)

    def _kernel(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "int4":
            return torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.packed, self.group_size, self.scales)
        return torch.ops.aten._weight_int8pack_mm(x, self.packed, self.scales)

    def _dynamic(self, x: torch.Tensor) -> torch.Tensor:
        """fbgemm takes float32 and quantizes the whole input with one scale, hence one row per call (the
        bias is in the packing)."""
        if x.shape[0] == 1:  # decode: no split, no cat
            return torch.ops.quantized.linear_dynamic(x.float(), self.packed, False).to(x.dtype)
        return torch.cat([torch.ops.quantized.linear_dynamic(r.float(), self.packed, False)
                          for r in x.split(1)]).to(x.dtype)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.dense is not None and x.shape[0] > self.max_rows:
            return self.dense(x)
        if self.dynamic:
            return self._dynamic(x)
        y = self._kernel(x)
        return y if self.bias is None else y.add_(self.bias)

    def nbytes(self) -> int:
        """Bytes of the quantized weight (scales included), without the dense copy."""
        b = 0 if self.bias is None else self.bias.nbytes
        return self.weight_bytes + b


def make_linear(weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype, quant: QuantMode,
                group_size: int, prepack: bool, keep_dense: bool = True, dynamic: bool = False):
    """The model's linear for one (fused) projection: dense in `dtype`, or quantized from the full-precision
    weight; an int4 shape the kernel cannot take falls back to int8. `dynamic` int8 where fbgemm runs."""
    if quant == "none":
        return DenseLinear(weight.to(dtype).contiguous(), bias, prepack)
    if quant == "int4" and int4_group_for(*weight.shape, group_size) is None:
        log.debug("int4 cannot take a [%d, %d] weight; int8 instead", *weight.shape)
        quant = "int8"
    return QuantizedLinear(weight, bias, quant, dtype, group_size, keep_dense, prepack,
                           dynamic=dynamic and dynamic_int8_works())
