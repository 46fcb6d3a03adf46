"""Batch- and cache-invariant attention (EngineConfig.deterministic): a query's output depends only on its
own context, never on how many other queries share the call, how long their contexts are, or whether its
prefix was prefilled in this pass or came from the cache.

Every query row goes through the same shapes: queries in tiles of QUERY_TILE rows (padded), keys in chunks
of KEY_CHUNK slots (padded, masked), so each matmul has one shape whatever the batch; p @ V is summed chunk
by chunk in key order, so masked chunks past a row's context add exact zeros. (One matmul over all keys is
not enough: BLAS picks its kernel, and so its reduction order, by the key count.) Float32 throughout.
Slower than the tuned kernels; `bench engine` shows by how much.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.forward_batch import Span

QUERY_TILE = 8
KEY_CHUNK = 64


@dataclass
class _SpanAttention:
    rows: slice  # the span's rows in the flat batch
    slots: torch.Tensor  # [keys] context slots, padded to KEY_CHUNK with the first slot
    bias: torch.Tensor  # [tiles * QUERY_TILE, keys] 0 where visible, -inf elsewhere


class DeterministicAttentionPlan:
    def __init__(self, shape: AttentionShape, spans: list[Span], offsets: list[int], block_size: int,
                 device: torch.device):
        self.shape = shape
        self.spans = [self._span(s, off, block_size, device) for s, off in zip(spans, offsets, strict=True)]

    def _span(self, span: Span, offset: int, block_size: int, device: torch.device) -> _SpanAttention:
        k = len(span.token_ids)
        ctx = span.start + k
        keys = -(-ctx // KEY_CHUNK) * KEY_CHUNK
        slots = [span.block_table[p // block_size] * block_size + p % block_size for p in range(ctx)]
        slots += [slots[0]] * (keys - ctx)
        rows = -(-k // QUERY_TILE) * QUERY_TILE
        q_pos = torch.arange(span.start, span.start + rows)[:, None]
        key = torch.arange(keys)[None, :]
        visible = (key <= q_pos) & (key < ctx)
        if self.shape.sliding_window:
            visible &= key > q_pos - self.shape.sliding_window
        visible[k:, 0] = True  # padded query rows: anything finite (dropped)
        bias = torch.zeros(rows, keys).masked_fill_(~visible, float("-inf"))
        return _SpanAttention(slice(offset, offset + k), torch.tensor(slots, device=device), bias.to(device))

    def attend(self, q, k, v, k_cache, v_cache) -> torch.Tensor:
        nh, nkv, hd = self.shape.num_heads, self.shape.num_kv_heads, self.shape.head_dim
        out = q.new_empty(q.shape[0], nh * hd)
        for sa in self.spans:
            keys = sa.slots.shape[0]
            chunks = keys // KEY_CHUNK
            kg = k_cache.index_select(1, sa.slots).float()  # [kv_heads, keys, hd]
            vg = v_cache.index_select(1, sa.slots).float().view(nkv, chunks, KEY_CHUNK, hd)
            span_q = q[sa.rows].float()
            n = span_q.shape[0]
            for first in range(0, n, QUERY_TILE):
                tile = span_q.new_zeros(QUERY_TILE, nh, hd)
                tile[: min(QUERY_TILE, n - first)] = span_q[first:first + QUERY_TILE]
                out_rows = self._tile(tile, kg, vg, sa.bias[first:first + QUERY_TILE], chunks)
                m = min(QUERY_TILE, n - first)
                out[sa.rows.start + first: sa.rows.start + first + m] = out_rows[:m].to(out.dtype)
        return out

    def _tile(self, tile, kg, vg, bias, chunks) -> torch.Tensor:
        """[QUERY_TILE, heads * hd] for one tile of queries [QUERY_TILE, heads, hd]."""
        nh, nkv, hd = self.shape.num_heads, self.shape.num_kv_heads, self.shape.head_dim
        grp = nh // nkv
        qg = tile.view(QUERY_TILE, nkv, grp, hd).permute(1, 2, 0, 3).reshape(nkv, grp * QUERY_TILE, hd)
        scores = torch.matmul(qg, kg.transpose(-1, -2)).view(nkv, grp, QUERY_TILE, -1) + bias
        probs = scores.softmax(-1).view(nkv, grp * QUERY_TILE, chunks, KEY_CHUNK).transpose(1, 2)
        o = torch.matmul(probs, vg).sum(1)  # [kv, grp * tile, hd]: chunk partials added in key order
        return o.view(nkv, grp, QUERY_TILE, hd).permute(2, 0, 1, 3).reshape(QUERY_TILE, nh * hd)
