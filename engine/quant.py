"""Weight-only quantized linears on CPU, run by torch's own kernels.

- int4: groups of `group_size` input features share a scale and a zero point (asymmetric min/max
  rounding), the layout of `torch.ops.aten._weight_int4pack_mm_for_cpu`: w = (q - 8) * scale + zero,
  q in 0..15. Group 32 is the block of GGUF's Q4_0/Q4_1/Q4_K, so a 4-bit GGUF comes through almost
  unchanged (its blocks already hold 16 levels between their min and max).
- int8: one symmetric scale per output channel, `torch.ops.aten._weight_int8pack_mm`.

Batch-1 decode reads every weight once per token, so it runs at memory bandwidth and the 2-4x smaller
weights are 2-4x less to read. Those kernels are slow for many rows (2-3x slower than oneDNN's bf16 matmul
for a 2,000-token prefill chunk), so a QuantizedLinear keeps a dense copy of its *dequantized* weight and
hands calls of more than `max_rows` rows to it: prefill keeps bf16 speed and both paths compute the same
model. Scales and zeros are stored in the activation dtype (the kernels require it).
"""

from __future__ import annotations

import logging
from typing import Literal

import torch

from deltaserve.engine.errors import EngineError
from deltaserve.engine.linear import DenseLinear

log = logging.getLogger(__name__)

QuantMode = Literal["none", "int8", "int4"]
QUANT_MODES = ("none", "int8", "int4")
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


def head_quant_for(quant: QuantMode, quantize_head: bool = False) -> QuantMode:
    """The LM head's precision: int4 projections keep a dense head unless `quantize_head`. Measured with
    SmolLM2 (whose GGUF holds the head as Q8_0) and Qwen2.5-Coder-1.5B (Q6_K head): int4 layers with a bf16
    head +0.04% / +1.0% perplexity, with an int4 head +3.9% / +2.2%; the int4 head saves 0.6 / 5.8 ms per
    token on one AVX-512 core. An int8 head reads half the bytes of bf16 but runs no faster on CPU."""
    return "none" if quant == "int4" and not quantize_head else quant


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
    of the same dequantized W (None: always the quantized kernel)."""

    __slots__ = ("mode", "packed", "scales", "group_size", "bias", "dense", "max_rows")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, mode: QuantMode, dtype: torch.dtype,
                 group_size: int = 32, keep_dense: bool = True, prepack: bool = False,
                 max_rows: int = MAX_QUANT_ROWS):
        n, k = weight.shape
        self.mode, self.bias, self.max_rows = mode, bias, max_rows
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
        else:
            raise EngineError(f"QuantizedLinear takes int4 or int8, not {mode!r}")
        self.dense = None if dequantized is None else DenseLinear(dequantized.to(dtype), bias, prepack)

    def _kernel(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "int4":
            return torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.packed, self.group_size, self.scales)
        return torch.ops.aten._weight_int8pack_mm(x, self.packed, self.scales)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.dense is not None and x.shape[0] > self.max_rows:
            return self.dense(x)
        y = self._kernel(x)
        return y if self.bias is None else y.add_(self.bias)

    def nbytes(self) -> int:
        """Bytes of the quantized weight (scales included), without the dense copy."""
        b = 0 if self.bias is None else self.bias.nbytes
        return self.packed.nbytes + self.scales.nbytes + b


def make_linear(weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype, quant: QuantMode,
                group_size: int, prepack: bool, keep_dense: bool = True):
    """The model's linear for one (fused) projection: dense in `dtype`, or quantized from the full-precision
    weight; an int4 shape the kernel cannot take falls back to int8."""
    if quant == "none":
        return DenseLinear(weight.to(dtype).contiguous(), bias, prepack)
    if quant == "int4" and int4_group_for(*weight.shape, group_size) is None:
        log.debug("int4 cannot take a [%d, %d] weight; int8 instead", *weight.shape)
        quant = "int8"
    return QuantizedLinear(weight, bias, quant, dtype, group_size, keep_dense, prepack)
