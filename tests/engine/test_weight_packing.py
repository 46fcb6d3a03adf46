"""fbgemm's packing at load (engine/packing.py) and the w8a8 linear's ways through a call (engine/quant.py):
packed in parts, packed on threads, called a row-chunk at a time -- the same numbers as one whole packing."""

from __future__ import annotations

import pytest
import torch

from deltaserve.engine import quant
from deltaserve.engine.packing import Packer
from deltaserve.engine.quant import QuantizedLinear, quantize_parts
from deltaserve.engine.tensor_file import TensorDict

pytestmark = pytest.mark.skipif(not quant.dynamic_int8_works(), reason="fbgemm's int8 GEMM is not here")


def parts(n: int = 96, k: int = 64) -> TensorDict:
    gen = torch.Generator().manual_seed(0)
    w, b = torch.randn(n, k, generator=gen) * 0.1, torch.randn(n, generator=gen)
    return TensorDict(quantize_parts(w, b, "int8", torch.bfloat16, dynamic=True))


def outputs(lin: QuantizedLinear) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    xs = [torch.randn(rows, 64, generator=gen) for rows in (1, 6, 23)]
    with quant.packed_weight_calls():
        return [lin(x.to(dtype)) for x in xs for dtype in (torch.float32, torch.bfloat16)]


def build(stored: TensorDict, packer: Packer | None = None) -> QuantizedLinear:
    """A linear from a copy of `stored` (reading the int8 weights for packing takes them out of the dict)."""
    return QuantizedLinear.from_parts(TensorDict(stored), "int8", torch.bfloat16, dynamic=True, packer=packer)


def test_parts_threads_and_row_chunks_change_no_number(monkeypatch):
    stored = parts()
    whole = outputs(build(stored))
    monkeypatch.setattr(quant, "PACK_SPLIT_ROWS", 64)
    monkeypatch.setattr(quant, "PACK_PART_ROWS", 32)  # 96 rows: three packings of 32
    split = build(stored)
    assert len(split.packed) == 3
    assert all(torch.equal(a, b) for a, b in zip(whole, outputs(split), strict=True))
    monkeypatch.setattr(quant, "ROW_CHUNK", 5)  # 23 rows: five chunks into one result
    assert all(torch.equal(a, b) for a, b in zip(whole, outputs(split), strict=True))
    before = torch.backends.quantized.engine
    with Packer(workers=2) as packer:
        threaded = [build(stored, packer) for _ in range(6)]
    assert torch.backends.quantized.engine == before
    for lin in threaded:
        assert isinstance(lin.packed, tuple) and len(lin.packed) == 3
        assert all(torch.equal(a, b) for a, b in zip(whole, outputs(lin), strict=True))


def test_w8a8_keeps_no_dense_copy():
    """The int8 weights are all it holds: no bf16 copy for many rows (fbgemm's GEMM runs those)."""
    lin = build(parts())
    assert lin.dense is None and lin.nbytes() == 96 * 64 + lin.scales.nbytes + lin.bias.nbytes
