"""Paged attention through torch's flex_attention: every query of the flat batch reads its K/V in place in
the pool, whatever the mix of prefill chunks, decode tokens and verify spans; no gather copies, no padding.

The pool's per-layer view [kv_heads, slots, head_dim] is flex's key/value as is ([1, kv_heads, slots, dim]),
and the flat batch's queries are one sequence of T rows ([1, heads, T, dim]). Which key a query sees is a
mask over (row, slot): the row's span owns the slot's page at logical index i (a table [spans, pages], -1
where the page is not the span's; a page shared through the prefix cache is listed by each span using it),
and the key's position i * block_size + offset is causal (and inside the sliding window) for the row. The
block mask lists, per block of QUERY_BLOCK rows, the KV_BLOCK-slot regions of the pool its spans touch, so
the kernel (Triton on CUDA) visits only those; the pool hands out consecutive pages where it can
(engine/free_blocks.py), so a context is mostly whole regions. On CPU flex runs eagerly, a dense reference:
inductor's CPU template wants a column per region of the pool (kv_indices as wide as the pool; here as wide as
the most regions a query block sees, which Triton takes) and, given that, failed to compile this mask_mod in
torch 2.13 (an undeclared variable in the generated C++).

FlexAttentionPlan is built per step; StaticDecodePlan keeps every tensor the mask reads in buffers of fixed
shape that each decode step refills, so a captured CUDA graph can replay it (engine/decode_graphs.py).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

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


def kv_block_for(block_size: int) -> int:
    kv_block = max(KV_BLOCK, block_size)
    if kv_block % block_size:
        raise ValueError(f"flex attention needs a page size dividing {kv_block}, not {block_size}")
    return kv_block


def paged_mask(page_of: torch.Tensor, row_span: torch.Tensor, row_pos: torch.Tensor, block_size: int,
               window: int | None):
    """mask_mod: row q sees slot kv iff its span holds kv's page at some logical index i and the key's
    position i * block_size + kv % block_size is causal (and inside the window) for q's position."""
    def visible(b, h, q_idx, kv_idx):
        index = page_of[row_span[q_idx], kv_idx // block_size]
        kv_pos = index * block_size + kv_idx % block_size
        q_pos = row_pos[q_idx]
        seen = (index >= 0) & (kv_pos <= q_pos)
        if window:
            seen = seen & (q_pos - kv_pos < window)
        return seen
    return visible


@dataclass
class PageOwners:
    """(span, page, logical index) of every page some span's rows may see, as host lists."""

    span: list[int]
    page: list[int]
    index: list[int]

    @classmethod
    def of(cls, spans: list[Span], block_size: int) -> PageOwners:
        owners = cls([], [], [])
        for i, s in enumerate(spans):
            pages = s.block_table[: -(-(s.start + len(s.token_ids)) // block_size)]
            owners.span.extend([i] * len(pages))
            owners.page.extend(pages)
            owners.index.extend(range(len(pages)))
        return owners


def regions_per_query_block(spans: list[Span], offsets: list[int], block_size: int,
                            kv_block: int) -> list[list[int]]:
    """Per block of QUERY_BLOCK rows, the sorted pool regions (of kv_block slots) its rows may see: each
    overlapping span's pages up to the block's last position of that span (causal)."""
    per_page = kv_block // block_size
    total = offsets[-1] + len(spans[-1].token_ids)
    lists: list[list[int]] = []
    for first in range(0, total, QUERY_BLOCK):
        last = min(first + QUERY_BLOCK, total) - 1
        regions: set[int] = set()
        for s, off in zip(spans, offsets, strict=True):
            end = off + len(s.token_ids) - 1
            if end < first or off > last:
                continue
            max_pos = s.start + min(end, last) - off
            regions.update(page // per_page for page in s.block_table[: max_pos // block_size + 1])
        lists.append(sorted(regions))
    return lists


def _attend(block_mask: BlockMask, shape: AttentionShape, compiled: bool, q: torch.Tensor,
            k_cache: torch.Tensor, v_cache: torch.Tensor) -> torch.Tensor:
    """Attention output [T, heads * head_dim] for queries q [T, heads, head_dim], reading this layer's pool
    k_cache / v_cache [kv_heads, slots, head_dim] (this step's K/V already written into it)."""
    args = (q.transpose(0, 1)[None], k_cache[None], v_cache[None])
    gqa = shape.num_heads != shape.num_kv_heads
    if compiled:
        o = compiled_flex_attention()(*args, block_mask=block_mask, scale=1.0, enable_gqa=gqa)
    else:
        with warnings.catch_warnings():  # eager flex is chosen on purpose (CPU checks of the CUDA path)
            warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
            o = flex_attention(*args, block_mask=block_mask, scale=1.0, enable_gqa=gqa)
    return o[0].transpose(0, 1).reshape(q.shape[0], -1)


class FlexAttentionPlan:
    """One step's attention through flex_attention: the block mask and the tensors its mask reads."""

    def __init__(self, shape: AttentionShape, spans: list[Span], offsets: list[int], block_size: int,
                 num_slots: int, device: torch.device, compiled: bool):
        self.shape, self.compiled = shape, compiled
        kv_block = kv_block_for(block_size)
        row_span = [i for i, s in enumerate(spans) for _ in s.token_ids]
        row_pos = [p for s in spans for p in range(s.start, s.start + len(s.token_ids))]
        owners = PageOwners.of(spans, block_size)
        regions = regions_per_query_block(spans, offsets, block_size, kv_block)
        width = max(map(len, regions))
        counts = [len(r) for r in regions]
        padded = [x for r in regions for x in r + [0] * (width - len(r))]
        row_span_t, row_pos_t, o_span, o_page, o_index, counts_t, indices_t = to_device(
            device, torch.long, row_span, row_pos, owners.span, owners.page, owners.index, counts, padded)
        num_pages = -(-num_slots // kv_block) * (kv_block // block_size)
        page_of = torch.full((len(spans), num_pages), -1, dtype=torch.long, device=device)
        page_of[o_span, o_page] = o_index
        n_q = len(counts)
        self.block_mask = BlockMask.from_kv_blocks(
            counts_t.to(torch.int32).view(1, 1, n_q), indices_t.to(torch.int32).view(1, 1, n_q, width),
            BLOCK_SIZE=(QUERY_BLOCK, kv_block), seq_lengths=(len(row_pos), num_slots), compute_q_blocks=False,
            mask_mod=paged_mask(page_of, row_span_t, row_pos_t, block_size, shape.sliding_window))

    def attend(self, q, k, v, k_cache, v_cache) -> torch.Tensor:
        return _attend(self.block_mask, self.shape, self.compiled, q, k_cache, v_cache)


class StaticDecodePlan:
    """Decode attention for a fixed batch of `rows` one-token spans, on buffers of fixed shape: `load` refills
    them for a step (rows beyond the step's spans read and write the pool's scratch slot only), and the
    same tensors serve every step, so a CUDA graph captured over the forward replays it."""

    def __init__(self, shape: AttentionShape, rows: int, block_size: int, num_slots: int, scratch_slot: int,
                 device: torch.device, compiled: bool):
        if rows > QUERY_BLOCK:
            raise ValueError(f"a static decode plan holds at most {QUERY_BLOCK} rows")
        self.shape, self.compiled, self.rows, self.device = shape, compiled, rows, device
        self.block_size, self.scratch_slot = block_size, scratch_slot
        self.kv_block = kv_block_for(block_size)
        num_regions = -(-num_slots // self.kv_block)
        self.row_span = torch.arange(rows, device=device)
        self.row_pos = torch.zeros(rows, dtype=torch.long, device=device)
        self.page_of = torch.full((rows, num_regions * (self.kv_block // block_size)), -1, dtype=torch.long,
                                  device=device)
        self.kv_num_blocks = torch.zeros(1, 1, 1, dtype=torch.int32, device=device)
        self.kv_indices = torch.zeros(1, 1, 1, num_regions, dtype=torch.int32, device=device)
        self.block_mask = BlockMask.from_kv_blocks(
            self.kv_num_blocks, self.kv_indices, BLOCK_SIZE=(QUERY_BLOCK, self.kv_block),
            seq_lengths=(rows, num_slots), compute_q_blocks=False,
            mask_mod=paged_mask(self.page_of, self.row_span, self.row_pos, block_size, shape.sliding_window))

    def padded(self, spans: list[Span]) -> list[Span]:
        """The step's spans, then rows of the scratch slot's own (a one-page table) up to `rows`."""
        scratch = Span([0], 0, [self.scratch_slot // self.block_size], [0])
        return spans + [scratch] * (self.rows - len(spans))

    def load(self, spans: list[Span]) -> None:
        """Refill the buffers for this step's (padded) spans: one staged copy, ops outside any graph."""
        owners = PageOwners.of(spans, self.block_size)
        regions = regions_per_query_block(spans, list(range(len(spans))), self.block_size, self.kv_block)[0]
        row_pos, o_span, o_page, o_index, count, indices = to_device(
            self.device, torch.long, [s.start for s in spans], owners.span, owners.page, owners.index,
            [len(regions)], regions)
        self.row_pos.copy_(row_pos)
        self.page_of.fill_(-1)
        self.page_of[o_span, o_page] = o_index
        self.kv_num_blocks.copy_(count.view(1, 1, 1))
        self.kv_indices[0, 0, 0, : len(regions)].copy_(indices)

    def attend(self, q, k, v, k_cache, v_cache) -> torch.Tensor:
        return _attend(self.block_mask, self.shape, self.compiled, q, k_cache, v_cache)
