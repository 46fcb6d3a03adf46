"""The KV pool's memory: zeroed, writable, and on a Linux CPU madvised for transparent huge pages."""

import gc
import sys
from pathlib import Path

import pytest
import torch

from deltaserve.engine.kv_cache import KVCache, pool_zeros


def vma_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds `address` (/proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and all(c in "0123456789abcdef-" for c in head):
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and line.startswith("VmFlags:"):
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def test_pool_starts_at_zero_and_takes_writes():
    kv = KVCache(num_layers=2, num_blocks=8, block_size=16, kv_heads=3, head_dim=64, dtype=torch.float32,
                 device=torch.device("cpu"))
    assert kv.k_blocks.is_contiguous() and not kv.k_blocks.any() and not kv.v_blocks.any()
    kv.k_layers[1].index_copy_(1, torch.tensor([5, 40]), torch.ones(3, 2, 64))
    assert kv.k[1, 5].eq(1).all() and kv.k[1, 40].eq(1).all() and kv.k_blocks.sum() == 2 * 3 * 64
    assert not kv.v_blocks.any()  # K and V are separate memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise(MADV_HUGEPAGE) is Linux's")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_pool_is_advised_for_huge_pages(dtype):
    pool = pool_zeros((4, 2, 64, 16, 64), dtype, torch.device("cpu"))
    assert pool.dtype == dtype and pool.shape == (4, 2, 64, 16, 64)
    assert "hg" in vma_flags(pool.data_ptr())  # VM_HUGEPAGE: the kernel may back it with 2 MiB pages
    assert "hg" not in vma_flags(torch.zeros(1 << 20).data_ptr())  # a plain tensor is not


def test_the_pool_outlives_its_mapping_object():
    pool = pool_zeros((1 << 16,), torch.float32, torch.device("cpu"))
    gc.collect()
    pool.fill_(3.0)
    assert pool.sum() == 3.0 * (1 << 16)
