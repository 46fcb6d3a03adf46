"""fbgemm's packing at load (engine/packing.py) and the w8a8 linear's ways through a call (engine/quant.py):
packed in parts, packed on threads, called a row-chunk at a time -- the same numbers as one whole packing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from deltaserve.engine import quant
from deltaserve.engine.packing import Packer
from deltaserve.engine.quant import QuantizedLinear, quantize_parts
from deltaserve.engine.tensor_file import TensorDict, TensorFile, TensorWriter

pytestmark = pytest.mark.skipif(not quant.dynamic_int8_works(), reason="fbgemm's int8 GEMM is not here")


def mapped_kb(t: torch.Tensor) -> int:
    """Resident kB of the memory map that holds t, in this process (/proc/self/smaps)."""
    addr, inside = t.data_ptr(), False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= addr < hi
        elif inside and head == "Rss:":
            return int(line.split()[1])
    raise AssertionError("no mapping holds the tensor")


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
    monkeypatch.setattr(quant, "PACK_SPLIT_MIN_INPUTS", 64)
    monkeypatch.setattr(quant, "PACK_PART_ROWS", 40)  # 96 rows: three packings of 32
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


def test_big_weights_pack_in_equal_parts_narrow_ones_whole():
    assert quant.pack_part_rows(17920, 1536) == 5974  # the 1.5B model's gate/up: three parts
    assert quant.pack_part_rows(151936, 1536) == 6078  # its head: 25 parts
    assert quant.pack_part_rows(8960, 1536) == 8960
    assert quant.pack_part_rows(49152, 576) == 49152  # SmolLM2-135M's head: whole


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")
def test_packing_from_the_cache_file_lets_the_rows_go(tmp_path):
    """Packed from a view of the file: the same numbers as from memory, and the packed rows' pages leave."""
    stored = parts(n=16384, k=64)
    writer = TensorWriter(tmp_path / "w.safetensors")
    writer.add_all(stored.items())
    writer.finish()
    file = TensorFile(tmp_path / "w.safetensors")
    lin = QuantizedLinear.from_parts(file, "int8", torch.bfloat16, dynamic=True)
    assert all(torch.equal(a, b) for a, b in zip(outputs(build(stored)), outputs(lin), strict=True))
    q = file.view("q")
    q.sum()  # every page of the int8 weight in: 1 MB
    assert mapped_kb(q) >= 1024
    file.release_rows("q", 0, q.shape[0])
    assert mapped_kb(q) <= 128  # the bias (a view: 32 kB) and the pages q shares with its neighbours
