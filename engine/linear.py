"""Dense linear layers: `F.linear`, or oneDNN-prepacked bf16 weights on CPU.

A linear is a callable `y = layer(x)` over a 2-D flat batch x [rows, in_features]; the model holds one per
projection, so dense and quantized layers (engine/quant.py) are interchangeable.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F


def mkldnn_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")


def can_prepack(dtype: torch.dtype, device: torch.device) -> bool:
    """oneDNN-prepacked bf16 weights: bit-identical to F.linear here, ~1.4-1.9x faster for batch-1 decode
    on a 2-core AVX-512 machine; fp32 keeps F.linear, whose results the HF comparisons pin."""
    try:
        return (device.type == "cpu" and dtype == torch.bfloat16 and torch.backends.mkldnn.is_available()
                and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


@functools.cache
def prepack_works(dtype: torch.dtype, device: torch.device) -> bool:
    """can_prepack, and this build really runs a prepacked matmul (some builds report support but fail);
    asked once a process (each engine asks twice: its dtype, its model's packing)."""
    if not can_prepack(dtype, device):
        return False
    try:
        w = torch.ops.mkldnn._reorder_linear_weight(torch.zeros(16, 16, dtype=dtype), 1)
        mkldnn_linear(torch.zeros(1, 16, dtype=dtype), w)
    except RuntimeError:
        return False
    return True


class DenseLinear:
    """y = x @ weight.T + bias, with the weight prepacked for oneDNN when `prepack`."""

    __slots__ = ("weight", "bias", "_fn")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None, prepack: bool = False):
        self.bias = bias
        if prepack:
            self.weight = torch.ops.mkldnn._reorder_linear_weight(weight, 1)  # a packed copy
            self._fn = mkldnn_linear
        else:
            self.weight = weight
            self._fn = F.linear

    @classmethod
    def from_parts(cls, parts, device: torch.device, prepack: bool = False) -> DenseLinear:
        """From a TensorFile-like's "weight" (and "bias"): a prepacked weight is read (the packing copies
        it), a plain one viewed where it is (no copy on CPU)."""
        weight = (parts.read if prepack else parts.view)("weight").to(device)
        bias = parts.view("bias").to(device) if "bias" in parts else None
        return cls(weight, bias, prepack)

    @property
    def prepacked(self) -> bool:
        return self._fn is mkldnn_linear

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self._fn(x, self.weight, self.bias)

    def nbytes(self) -> int:
        b = 0 if self.bias is None else self.bias.nbytes
        return self.weight.numel() * self.weight.element_size() + b
