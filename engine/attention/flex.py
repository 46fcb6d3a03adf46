"""Paged attention through torch's flex_attention: every query of the flat batch reads its K/V in place in
the pool, whatever the mix of prefill chunks, decode tokens and verify spans; no gather copies, no padding.

The pool's per-layer view [kv_heads, slots, head_dim] is flex's key/value as is ([1, kv_heads, slots, dim]),
and the flat batch's queries are one sequence of T rows ([1, heads, T, dim]). Which key a query sees is a
mask over (row, slot): the row's span owns the slot's page at logical index i (a table [spans, pages], -1
where the page is not the span's; a page shared through the prefix cache is listed by each span using it),
and the key's position i * block_size + offset is causal (and inside the sliding window) for the row. The
block mask lists, per block of QUERY_BLOCK rows, the KV_BLOCK-slot regions of the pool its spans touch, so
the kernel (Triton on CUDA, C++ when compiled on CPU) visits only those; the pool hands out consecutive
pages where it can (engine/free_blocks.py), so a context is mostly whole regions.
"""

from __future__ import annotations

import functools
import warnings

import torch
from torch.nn.attention.flex_attention import BlockMask, flex_attention

from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.forward_batch import Span
from deltaserve.engine.staging import to_device

QUERY_BLOCK = 128  # rows of the flat batch per block-mask row (flex's default tile)
KV_BLOCK = 128  # pool slots per block-mask column: a multiple of the page size, the kernels' KV tile


@functools.cache
def compiled_flex_attention():
    """flex_attention compiled (Triton kernels on CUDA); eager flex is a dense reference implementation."""
    return torch.compile(flex_attention, dynamic=True)


class FlexAttentionPlan:
    """One step's attention through flex_attention: the block mask and the tensors its mask reads."""

    def __init__(self, shape: AttentionShape, spans: list[Span], offsets: list[int], block_size: int,
                 num_slots: int, device: torch.device, compiled: bool):
        self.shape = shape
        self.compiled = compiled
        kv_block = max(KV_BLOCK, block_size)
        if kv_block % block_size:
            raise ValueError(f"flex attention needs a page size dividing {kv_block}, not {block_size}")
        total = offsets[-1] + len(spans[-1].token_ids)
        row_span: list[int] = []
        row_pos: list[int] = []
        for i, s in enumerate(spans):
            row_span.extend([i] * len(s.token_ids))
            row_pos.extend(range(s.start, s.start + len(s.token_ids)))
        # (span, page) -> logical page index, for every page a span's rows may see
        owner_span: list[int] = []
        owner_page: list[int] = []
        owner_index: list[int] = []
        for i, s in enumerate(spans):
            pages = s.block_table[: -(-(s.start + len(s.token_ids)) // block_size)]
            owner_span.extend([i] * len(pages))
            owner_page.extend(pages)
            owner_index.extend(range(len(pages)))
        kv_counts, kv_lists = self._regions(spans, offsets, row_pos, total, block_size, kv_block)
        width = max(map(len, kv_lists))
        kv_indices = [r + [0] * (width - len(r)) for r in kv_lists]
        staged = to_device(device, torch.long, row_span, row_pos, owner_span, owner_page, owner_index,
                           kv_counts, [x for r in kv_indices for x in r])
        row_span_t, row_pos_t, o_span, o_page, o_index, counts_t, indices_t = staged
        num_pages = -(-num_slots // kv_block) * (kv_block // block_size)
        page_of = torch.full((len(spans), num_pages), -1, dtype=torch.long, device=device)
        page_of[o_span, o_page] = o_index
        window = shape.sliding_window

        def visible(b, h, q_idx, kv_idx):
            index = page_of[row_span_t[q_idx], kv_idx // block_size]
            kv_pos = index * block_size + kv_idx % block_size
            q_pos = row_pos_t[q_idx]
            seen = (index >= 0) & (kv_pos <= q_pos)
            if window:
                seen = seen & (q_pos - kv_pos < window)
            return seen

        n_q = len(kv_counts)
        self.block_mask = BlockMask.from_kv_blocks(
            counts_t.to(torch.int32).view(1, 1, n_q), indices_t.to(torch.int32).view(1, 1, n_q, width),
            BLOCK_SIZE=(QUERY_BLOCK, kv_block), mask_mod=visible, seq_lengths=(total, num_slots),
            compute_q_blocks=False)

    @staticmethod
    def _regions(spans: list[Span], offsets: list[int], row_pos: list[int], total: int, block_size: int,
                 kv_block: int) -> tuple[list[int], list[list[int]]]:
        """Per block of QUERY_BLOCK rows, the sorted pool regions (of kv_block slots) its rows may see:
        each overlapping span's pages up to the block's last position of that span (causal)."""
        per_page = kv_block // block_size
        counts: list[int] = []
        lists: list[list[int]] = []
        for first in range(0, total, QUERY_BLOCK):
            last = min(first + QUERY_BLOCK, total) - 1
            regions: set[int] = set()
            for s, off in zip(spans, offsets, strict=True):
                end = off + len(s.token_ids) - 1
                if end < first or off > last:
                    continue
                max_pos = row_pos[min(end, last)]
                regions.update(page // per_page for page in s.block_table[: max_pos // block_size + 1])
            ordered = sorted(regions)
            counts.append(len(ordered))
            lists.append(ordered)
        return counts, lists

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
               v_cache: torch.Tensor) -> torch.Tensor:
        """Attention output [T, heads * head_dim] for queries q [T, heads, head_dim], reading this layer's
        pool k_cache / v_cache [kv_heads, slots, head_dim] (this step's K/V already written into it)."""
        total = q.shape[0]
        args = (q.transpose(0, 1)[None], k_cache[None], v_cache[None])
        gqa = self.shape.num_heads != self.shape.num_kv_heads
        if self.compiled:
            o = compiled_flex_attention()(*args, block_mask=self.block_mask, scale=1.0, enable_gqa=gqa)
        else:
            with warnings.catch_warnings():  # eager flex is chosen on purpose (CPU checks of the CUDA path)
                warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
                o = flex_attention(*args, block_mask=self.block_mask, scale=1.0, enable_gqa=gqa)
        return o[0].transpose(0, 1).reshape(total, -1)
