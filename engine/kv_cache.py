"""The paged KV pool: one K and one V tensor [layers, kv_heads, num_blocks, block_size, head_dim].

A token's KV lives in a *slot* = block_id * block_size + offset. The model reads and writes the pool
through the flat per-layer views `k_heads[layer]` / `v_heads[layer]` of shape [kv_heads,
num_blocks * block_size, head_dim]; `k` / `v` are the same memory seen slot-major, [layers, slots,
kv_heads, head_dim], for inspection (tests compare KV per slot). Heads come first in memory so that
gathering a sequence's slots yields [kv_heads, context, head_dim] contiguous, which the attention
matmuls take without copies (2-2.5x faster decode attention on CPU than a slot-major layout). Which
blocks belong to whom is the block manager's business (engine/prefix_cache.py).
"""

from __future__ import annotations

import math
import mmap

import torch

DEFAULT_CPU_KV_MB = 768  # for a 2-byte dtype: float32 gets twice that, so the default holds as many tokens
DEFAULT_CUDA_KV_FRACTION = 0.5  # of the memory free after loading weights


def bytes_per_block(num_layers: int, block_size: int, kv_heads: int, head_dim: int,
                    dtype: torch.dtype) -> int:
    return 2 * num_layers * block_size * kv_heads * head_dim * torch.empty((), dtype=dtype).element_size()


def default_num_blocks(per_block: int, device: torch.device, kv_cache_memory_mb: int | None,
                       dtype: torch.dtype = torch.bfloat16) -> int:
    if kv_cache_memory_mb is not None:
        budget = kv_cache_memory_mb * 2**20
    elif device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        budget = int(free * DEFAULT_CUDA_KV_FRACTION)
    else:  # float32 where bf16 is emulated (quant.default_dtype): the same tokens as bf16 elsewhere
        budget = DEFAULT_CPU_KV_MB * 2**20 * max(1, dtype.itemsize // 2)
    return max(1, budget // per_block)


def pool_zeros(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A zeroed pool tensor. On a Linux CPU it lies in an anonymous mapping madvised for transparent huge
    pages: a decode step streams every layer's context K/V, and on 4 KiB pages the CPU's prefetch and TLB cap
    that stream (SmolLM2-135M decode at 2,000 tokens: 9% less time per token, 1 thread, 2-core EPYC). The pool
    grows in memory by at most one 2 MiB page per layer, head and K/V over what it holds: the mapping is
    zero-filled lazily, as torch.zeros' is."""
    if torch.device(device).type != "cpu" or not hasattr(mmap, "MADV_HUGEPAGE"):
        return torch.zeros(shape, dtype=dtype, device=device)
    region = mmap.mmap(-1, math.prod(shape) * dtype.itemsize, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    region.madvise(mmap.MADV_HUGEPAGE)
    return torch.frombuffer(region, dtype=dtype).view(shape)  # the tensor keeps the mapping alive


class KVCache:
    def __init__(self, num_layers: int, num_blocks: int, block_size: int, kv_heads: int, head_dim: int,
                 dtype: torch.dtype, device: torch.device):
        self.num_blocks = num_blocks  # blocks the block manager hands out
        self.block_size = block_size
        # one block more, never handed out: the scratch slot padded rows of a fixed-size decode batch write to
        # and read from (engine/decode_graphs.py)
        self.scratch_slot = num_blocks * block_size
        self.num_slots = (num_blocks + 1) * block_size  # every slot of the pool, the scratch block's too
        shape = (num_layers, kv_heads, num_blocks + 1, block_size, head_dim)
        # zeros, not empty: padded attention reads masked slots, and 0 * NaN garbage would still be NaN.
        self.k_blocks = pool_zeros(shape, dtype, device)
        self.v_blocks = pool_zeros(shape, dtype, device)
        flat = (num_layers, kv_heads, self.num_slots, head_dim)
        self.k_heads = self.k_blocks.view(flat)
        self.v_heads = self.v_blocks.view(flat)
        self.k_layers, self.v_layers = list(self.k_heads), list(self.v_heads)  # per-layer views, made once
        self.k = self.k_heads.transpose(1, 2)  # [layers, slots, kv_heads, head_dim] views
        self.v = self.v_heads.transpose(1, 2)

    def copy_block(self, src: int, dst: int) -> None:
        """Copy one block's K and V, every layer, into another block."""
        self.k_blocks[:, :, dst] = self.k_blocks[:, :, src]
        self.v_blocks[:, :, dst] = self.v_blocks[:, :, src]
