"""The CPU attention kernels: paged attention by gather + matmuls, tuned on CPUs (bench engine).

Spans of up to MAX_BATCHED_SPAN tokens (decode and verify spans) share one padded call of two matmuls and a
softmax with the GQA groups folded into the query axis (about 3x faster than SDPA on CPU in bf16, no K/V
expansion); batch-1 decode (one_query_attention) reads its context as a view of the pool where its blocks
follow each other; a fresh prompt runs SDPA's causal kernel on its own K/V; a longer span over cached
context runs SDPA over the gathered context. The plan (gather indices, masks) is built once per step and
shared by all layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.forward_batch import Span

# Spans up to this length are batched into one padded attention call (decode and verify spans);
# longer ones (prefill chunks) get their own call so nobody pays for their padding.
MAX_BATCHED_SPAN = 16
# A longer span over cached context still uses the matmul attention up to this length, then SDPA.
MAX_MATMUL_SPAN = 128
# Matmul attention over at most this many keys runs in fp32 on CPU (bf16 wins beyond: ~same at 256 keys,
# 2.9x faster at 2,000, measured on one AVX-512 core).
FP32_ATTENTION_MAX_KEYS = 256


@dataclass
class AttnGroup:
    """Spans that share one attention call."""

    token_index: torch.Tensor | slice  # [B, qmax] rows of the flat batch (padded) or a slice for B == 1
    kv_index: torch.Tensor | None  # [B, kmax] cache slots to read; None -> attend to the new K/V only
    # [B, qmax, kmax] additive float (0 / -inf) for batched short spans; [1, 1, q, k] bool for a long
    # span over cached context (SDPA); None with is_causal or when every key is visible
    mask: torch.Tensor | None
    is_causal: bool
    batch: int
    qmax: int
    # padded rows that are real, and the flat-batch rows they go to; None -> every padded row, in order
    scatter: tuple[torch.Tensor, torch.Tensor] | None = None
    # B == 1 and kv_index is kv_start, kv_start + 1, ...: attention reads a view of the pool, no gather
    kv_start: int | None = None


class CpuAttentionPlan:
    """One step's attention on CPU: its groups, and whether one group's output is the flat batch as is."""

    def __init__(self, shape: AttentionShape, spans: list[Span], offsets: list[int], block_size: int,
                 device: torch.device):
        self.shape = shape
        groups: list[AttnGroup] = []
        small = [i for i, s in enumerate(spans) if len(s.token_ids) <= MAX_BATCHED_SPAN]
        for i, span in enumerate(spans):
            if len(span.token_ids) > MAX_BATCHED_SPAN:
                groups.append(self._long_group(span, offsets[i], block_size))
        if small:
            groups.append(self._batched_group([spans[i] for i in small], [offsets[i] for i in small],
                                              block_size))
        total = sum(len(s.token_ids) for s in spans)
        g = groups[0]
        self.identity_output = len(groups) == 1 and g.scatter is None and (
            isinstance(g.token_index, slice) or g.batch * g.qmax == total)
        self.groups = [_on(g, device) for g in groups] if device.type != "cpu" else groups
        # batch-1 decode over consecutive blocks (the common step): (first slot, keys), read as a view
        one_token = self.identity_output and g.batch == 1 and g.qmax == 1 and g.mask is None
        self.decode_view = (g.kv_start, g.kv_index.shape[1]) if one_token and g.kv_start is not None else None

    # ---- the plan ----

    def _context_slots(self, span: Span, block_size: int) -> torch.Tensor:
        ctx = span.start + len(span.token_ids)
        bt = torch.tensor(span.block_table[: (ctx + block_size - 1) // block_size], dtype=torch.long)
        return (bt[:, None] * block_size + torch.arange(block_size)).flatten()[:ctx]

    def _visible(self, q_pos: torch.Tensor, ctx: int, kmax: int) -> torch.Tensor:
        """[len(q_pos), kmax] causal (+ sliding window) visibility of keys 0..kmax-1."""
        key = torch.arange(kmax)
        vis = (key[None, :] <= q_pos[:, None]) & (key[None, :] < ctx)
        if self.shape.sliding_window:
            vis &= key[None, :] > q_pos[:, None] - self.shape.sliding_window
        return vis

    @staticmethod
    def _bias(visible: torch.Tensor) -> torch.Tensor:
        """Additive float32 mask: 0 where visible, -inf elsewhere."""
        return torch.zeros(visible.shape, dtype=torch.float32).masked_fill_(~visible, float("-inf"))

    def _long_group(self, span: Span, offset: int, block_size: int) -> AttnGroup:
        k = len(span.token_ids)
        rows = slice(offset, offset + k)
        window = self.shape.sliding_window
        window_bites = window is not None and span.start + k > window
        if span.start == 0 and not window_bites:  # fresh prompt: attend to the new K/V, plain causal
            return AttnGroup(rows, None, None, True, 1, k)
        ctx = span.start + k
        visible = self._visible(torch.arange(span.start, ctx), ctx, ctx)
        kv_index = self._context_slots(span, block_size)[None]
        if k <= MAX_MATMUL_SPAN:  # e.g. a new chat turn over a cached conversation: matmul attention
            return AttnGroup(rows, kv_index, self._bias(visible[None]), False, 1, k)
        return AttnGroup(rows, kv_index, visible[None, None], False, 1, k)  # bool: SDPA's own kernel

    def _batched_group(self, spans: list[Span], offsets: list[int], block_size: int) -> AttnGroup:
        b = len(spans)
        lens = [len(s.token_ids) for s in spans]
        qmax = max(lens)
        ctxs = [s.start + k for s, k in zip(spans, lens, strict=True)]
        kmax = max(ctxs)
        window = self.shape.sliding_window
        if b == 1 and qmax == 1 and not window:  # batch-1 decode: every key visible, no padding
            start = consecutive_start(spans[0].block_table, ctxs[0], block_size)
            # blocks that follow each other hold slots start, start + 1, ...: one arange, no index per block
            kv_index = (self._context_slots(spans[0], block_size) if start is None
                        else torch.arange(start, start + ctxs[0]))[None]
            return AttnGroup(slice(offsets[0], offsets[0] + 1), kv_index, None, False, 1, 1, kv_start=start)
        kv_index = torch.zeros(b, kmax, dtype=torch.long)
        token_index = torch.zeros(b, qmax, dtype=torch.long)
        mask = torch.zeros(b, qmax, kmax, dtype=torch.bool)
        for i, (s, off, ctx, k) in enumerate(zip(spans, offsets, ctxs, lens, strict=True)):
            kv_index[i, :ctx] = self._context_slots(s, block_size)
            token_index[i, :k] = torch.arange(off, off + k)
            mask[i, :k] = self._visible(torch.arange(s.start, ctx), ctx, kmax)
            mask[i, k:, 0] = True  # padded query rows: anything finite (their output is dropped)
        scatter = None
        if any(k < qmax for k in lens):  # padded rows out: real rows go back by index, never by a bool mask
            src = torch.tensor([i * qmax + j for i, k in enumerate(lens) for j in range(k)])
            scatter = (src, token_index.flatten()[src])
        every_key_visible = qmax == 1 and all(c == kmax for c in ctxs) and not window
        return AttnGroup(token_index, kv_index, None if every_key_visible else self._bias(mask), False, b,
                         qmax, scatter)

    # ---- the kernels ----

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
               v_cache: torch.Tensor) -> torch.Tensor:
        """Attention output [T, heads * head_dim] of the flat batch's queries q [T, heads, head_dim]; k, v:
        this step's new K/V [T, kv_heads, head_dim] (already written into k_cache / v_cache)."""
        nh, hd, nkv = self.shape.num_heads, self.shape.head_dim, self.shape.num_kv_heads
        if self.decode_view is not None:  # _one_token_attention's view case, without its Python around it
            start, keys = self.decode_view
            return one_query_attention(q, k_cache.narrow(1, start, keys), v_cache.narrow(1, start, keys))
        total = q.shape[0]
        out = None if self.identity_output else q.new_empty(total, nh * hd)
        for g in self.groups:
            if g.kv_index is None:  # fresh prompt span: its own K/V, causal (CPU flash kernel)
                o = F.scaled_dot_product_attention(
                    q[g.token_index].transpose(0, 1)[None], k[g.token_index].transpose(0, 1)[None],
                    v[g.token_index].transpose(0, 1)[None], is_causal=True, scale=1.0, enable_gqa=nh != nkv,
                ).transpose(1, 2).reshape(g.batch * g.qmax, nh * hd)
            elif g.mask is not None and g.mask.dtype == torch.bool:  # a long span over cached context
                kv_idx = g.kv_index[0]
                o = F.scaled_dot_product_attention(
                    q[g.token_index].transpose(0, 1)[None], k_cache.index_select(1, kv_idx)[None],
                    v_cache.index_select(1, kv_idx)[None], attn_mask=g.mask, scale=1.0, enable_gqa=nh != nkv,
                ).transpose(1, 2).reshape(g.qmax, nh * hd)
            else:
                o = self._paged_attention(q, k_cache, v_cache, g, out is None)
            if out is None:
                return o
            if isinstance(g.token_index, slice):
                out[g.token_index] = o
            elif g.scatter is None:
                out.index_copy_(0, g.token_index.flatten(), o)
            else:
                src, dest = g.scatter
                out.index_copy_(0, dest, o.index_select(0, src))
        return out

    def _paged_attention(self, q, k_cache, v_cache, g: AttnGroup, identity: bool) -> torch.Tensor:
        """Spans attending to their cached context, read through the slots in g.kv_index: two matmuls and a
        softmax with the GQA groups folded into the query axis. The gathered K/V come out [kv_heads, batch,
        kmax, head_dim] contiguous, so both matmuls run copy-free."""
        nh, nkv, hd = self.shape.num_heads, self.shape.num_kv_heads, self.shape.head_dim
        grp, b, t = nh // nkv, g.batch, g.qmax
        kmax = g.kv_index.shape[1]
        if b == 1 and t == 1 and g.mask is None:
            return self._one_token_attention(q, k_cache, v_cache, g, identity)
        if identity:
            qg = q.view(b, t, nkv, grp, hd)
        else:
            idx = g.token_index if isinstance(g.token_index, slice) else g.token_index.flatten()
            qg = q[idx].view(b, t, nkv, grp, hd)
        qg = qg.permute(2, 0, 3, 1, 4).reshape(nkv, b, grp * t, hd)
        flat = g.kv_index.flatten()
        kg = k_cache.index_select(1, flat).view(nkv, b, kmax, hd)
        vg = v_cache.index_select(1, flat).view(nkv, b, kmax, hd)
        upcast = kmax <= FP32_ATTENTION_MAX_KEYS and q.dtype != torch.float32
        if upcast:  # tiny bf16 matmuls cost a fixed ~12 us each on CPU; fp32 ones a third of that
            qg, kg, vg = qg.float(), kg.float(), vg.float()
        scores = torch.matmul(qg, kg.transpose(-1, -2))  # q carries the 1/sqrt(head_dim) scale already
        if g.mask is not None:
            scores = (scores.view(nkv, b, grp, t, kmax) + g.mask[None, :, None]).view(nkv, b, grp * t, kmax)
        probs = scores.softmax(-1, dtype=torch.float32).to(vg.dtype)
        o = torch.matmul(probs, vg)  # [kv, b, grp * t, hd]
        if upcast:
            o = o.to(q.dtype)
        return o.view(nkv, b, grp, t, hd).permute(1, 3, 0, 2, 4).reshape(b * t, nh * hd)

    def _one_token_attention(self, q, k_cache, v_cache, g: AttnGroup, identity: bool) -> torch.Tensor:
        """Batch-1 decode (one_query_attention): a context whose blocks follow each other in the pool is
        read as a view instead of gathered."""
        row = q if identity else q[g.token_index]
        if g.kv_start is not None:
            kmax = g.kv_index.shape[1]
            kg, vg = k_cache.narrow(1, g.kv_start, kmax), v_cache.narrow(1, g.kv_start, kmax)
        else:
            flat = g.kv_index[0]
            kg, vg = k_cache.index_select(1, flat), v_cache.index_select(1, flat)
        return one_query_attention(row, kg, vg)


def one_query_attention(q: torch.Tensor, kg: torch.Tensor, vg: torch.Tensor) -> torch.Tensor:
    """Attention [1, heads * head_dim] of one token's queries q (heads * head_dim values) over every key of
    kg, vg [kv_heads, ctx, head_dim]. One query sees every key, so each KV head's query heads stand in for
    the query axis ([kv_heads, group, head_dim] against [kv_heads, ctx, head_dim]): no K/V expansion, no
    mask. Float32 runs two batched matmuls and a softmax: ~5% less time per token than SDPA's flash kernel
    for SmolLM2-135M at 2,000 keys (30 layers, 1 thread, 2-core AVX-512 EPYC), whose blocks of keys cost more
    than one matmul over all of them; bf16 keeps SDPA (its bf16 matmuls are 1.3x slower there)."""
    nkv, _, hd = kg.shape
    qg = q.view(nkv, -1, hd)
    if kg.dtype != torch.float32:
        return F.scaled_dot_product_attention(qg[None], kg[None], vg[None], scale=1.0).view(1, -1)
    scores = torch.bmm(qg, kg.transpose(1, 2))  # q carries the 1/sqrt(head_dim) scale already
    return torch.bmm(scores.softmax(-1), vg).view(1, -1)


def _on(g: AttnGroup, device: torch.device) -> AttnGroup:
    """The group with its tensors on `device` (these kernels are CPU-tuned; elsewhere a fallback)."""
    move = lambda t: t.to(device) if isinstance(t, torch.Tensor) else t  # noqa: E731
    scatter = None if g.scatter is None else (move(g.scatter[0]), move(g.scatter[1]))
    return AttnGroup(move(g.token_index), move(g.kv_index), move(g.mask), g.is_causal, g.batch, g.qmax,
                     scatter, g.kv_start)


def consecutive_start(block_table: list[int], ctx: int, block_size: int) -> int | None:
    """The first slot of a context whose blocks follow each other in the pool (engine/free_blocks.py hands
    them out so where it can), else None. Reading such a context as a view saves gathering all its K/V
    once per layer and token: 2,000-token decode steps 8-12% faster on CPU (1.5B and 135M models)."""
    n = (ctx + block_size - 1) // block_size
    first = block_table[0]
    if block_table[n - 1] - first != n - 1 or any(b != first + i for i, b in enumerate(block_table[:n])):
        return None
    return first * block_size
