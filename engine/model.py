"""Our own Llama-family forward (llama, mistral, qwen2, qwen3) over the paged KV cache.

One call runs a *flat batch*: every sequence contributes a span of k >= 1 new tokens at positions
[start, start + k) -- a prefill chunk, one decode token, or a speculative verify span -- and asks for
the logits of some of those positions. New K/V are written to the sequence's slots first, then each
span attends to its whole context read back through its block table. Speed notes: q/k/v and gate/up
are fused into one matmul each, RoPE tables are precomputed, q and k are rotated in one op, and the
attention inputs (gather indices, masks) are built once per step and shared by all layers.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from deltaserve.engine.errors import EngineError
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.linear import DenseLinear, prepack_works
from deltaserve.engine.quant import HeadQuant, QuantMode, head_quant_for, make_linear, packed_weight_calls

SUPPORTED_ARCHS = ("llama", "mistral", "qwen2", "qwen3")
# Spans up to this length are batched into one padded attention call (decode and verify spans);
# longer ones (prefill chunks) get their own call so nobody pays for their padding.
MAX_BATCHED_SPAN = 16
# A longer span over cached context still uses the matmul attention up to this length, then SDPA.
MAX_MATMUL_SPAN = 128
# Matmul attention over at most this many keys runs in fp32 on CPU (bf16 wins beyond: ~same at 256 keys,
# 2.9x faster at 2,000, measured on one AVX-512 core).
FP32_ATTENTION_MAX_KEYS = 256


@dataclass
class Span:
    """One sequence's share of a forward pass."""

    token_ids: list[int]
    start: int  # position of token_ids[0] = number of tokens already in this sequence's KV
    block_table: list[int]
    logits_offsets: list[int] = field(default_factory=list)  # offsets in the span whose logits are wanted


@dataclass
class AttnGroup:
    """Spans that share one scaled_dot_product_attention call."""

    token_index: torch.Tensor | slice  # [B, qmax] rows of the flat batch (padded) or a slice for B == 1
    kv_index: torch.Tensor | None  # [B, kmax] cache slots to read; None -> attend to the new K/V only
    # [B, qmax, kmax] additive float (0 / -inf) for batched short spans; [1, 1, q, k] bool for a long
    # span over cached context (SDPA); None with is_causal or when every key is visible
    mask: torch.Tensor | None
    is_causal: bool
    valid: torch.Tensor | None  # [B * qmax] which padded query rows are real; None -> all
    batch: int
    qmax: int
    # B == 1 and kv_index is kv_start, kv_start + 1, ...: attention reads a view of the pool, no gather
    kv_start: int | None = None


@dataclass
class ForwardBatch:
    input_ids: torch.Tensor
    positions: torch.Tensor
    slots: torch.Tensor
    logits_index: torch.Tensor
    groups: list[AttnGroup]
    identity_output: bool  # one group whose padded rows are exactly the flat batch, in order


def hf_arch(hf_config) -> str:
    arch = getattr(hf_config, "model_type", None)
    if arch not in SUPPORTED_ARCHS:
        raise EngineError(f"unsupported model_type {arch!r}; supported: {', '.join(SUPPORTED_ARCHS)}")
    return arch


def sliding_window_of(hf_config) -> int | None:
    arch = hf_arch(hf_config)
    if arch == "mistral":
        return getattr(hf_config, "sliding_window", None)
    if getattr(hf_config, "use_sliding_window", False):
        raise EngineError(f"{arch} with use_sliding_window=True is not supported")
    return None


def rope_tables(hf_config, head_dim: int, max_positions: int, dtype: torch.dtype, device) -> tuple:
    """cos and signed sin [max_positions, 1, head_dim] so that rope(x) = x*cos + roll(x, hd/2)*sin."""
    params = getattr(hf_config, "rope_parameters", None) or {}
    if not params:  # transformers < 5 keeps these as separate attributes
        params = dict(getattr(hf_config, "rope_scaling", None) or {})
        params.setdefault("rope_theta", getattr(hf_config, "rope_theta", 10000.0))
    rope_type = params.get("rope_type", params.get("type", "default"))
    scaling = 1.0
    if rope_type == "default":
        base = params["rope_theta"]
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float) / head_dim))
    else:
        from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # heavy: only for scaled RoPE

        if rope_type not in ROPE_INIT_FUNCTIONS:
            raise EngineError(f"unsupported rope_type {rope_type!r}")
        inv_freq, scaling = ROPE_INIT_FUNCTIONS[rope_type](hf_config, torch.device("cpu"))
    freqs = torch.arange(max_positions, dtype=torch.float)[:, None] * inv_freq.float()[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos = emb.cos() * scaling
    sin = emb.sin() * scaling
    half = head_dim // 2
    sin = torch.cat((-sin[:, :half], sin[:, half:]), dim=-1)  # rotate_half's sign folded into the table
    return cos.to(dtype).to(device)[:, None, :], sin.to(dtype).to(device)[:, None, :]


@functools.cache
def _norm_constants(n: int, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(float(n)), torch.tensor(eps)


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    """F.rms_norm over the last dim, bit for bit, in 5 ops for float32 on CPU where torch's is a composite of
    ~10 (its Python-float scalars each wrapped in a tensor): 22 us against 36 a call on a 2-core EPYC, 61
    calls a SmolLM2 token. Same steps in the same order: x * rsqrt(sum(x * x) / n + eps), then * weight."""
    if x.dtype != torch.float32 or x.device.type != "cpu":
        return F.rms_norm(x, x.shape[-1:], weight, eps)
    n, eps_t = _norm_constants(x.shape[-1], eps)
    y = torch.mul(x, torch.addcdiv(eps_t, (x * x).sum(-1, keepdim=True), n).rsqrt_())
    return y if weight is None else y.mul_(weight)


class Layer:
    __slots__ = ("in_norm", "qkv", "qk_norm", "o", "post_norm", "gu", "down")


class LlamaModel:
    """Weights as plain tensors and linear callables (engine/linear.py, engine/quant.py), and a forward
    pass that is just a loop over layers. `quant` stores the projections int4/int8, `head_quant` the LM
    head (engine/quant.py's head_quant_for resolves "auto"). The model consumes `weights`: each entry is
    removed once converted, so loading never holds the source checkpoint and the model in full at once."""

    def __init__(self, hf_config, weights: dict[str, torch.Tensor], dtype: torch.dtype, device,
                 max_positions: int, quant: QuantMode = "none", group_size: int = 32,
                 head_quant: HeadQuant = "auto"):
        self.arch = hf_arch(hf_config)
        c = hf_config
        self.num_layers = c.num_hidden_layers
        self.num_heads = c.num_attention_heads
        self.num_kv_heads = getattr(c, "num_key_value_heads", None) or c.num_attention_heads
        self.head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.hidden_size = c.hidden_size
        self.eps = c.rms_norm_eps
        self.vocab_size = c.vocab_size
        self.sliding_window = sliding_window_of(c)
        self.dtype, self.device = dtype, torch.device(device)
        self.quant, self.group_size = quant, group_size
        act = getattr(c, "hidden_act", "silu")
        if act != "silu":
            raise EngineError(f"unsupported hidden_act {act!r} (only silu / SwiGLU)")
        self.prepack = prepack_works(dtype, self.device)

        embed = weights.pop("model.embed_tokens.weight")
        self.embed = embed.to(device=self.device, dtype=dtype).contiguous()
        self.final_norm = self._take(weights, "model.norm.weight")
        head_quant = head_quant_for(quant, head_quant, self.device)
        if "lm_head.weight" in weights:
            self.lm_head = self._linear(weights, ["lm_head"], quant=head_quant, dynamic=True)
        elif head_quant == "none" and not self.prepack:
            self.lm_head = DenseLinear(self.embed)  # tied: the lookup table itself
        else:  # tied, but packed or quantized: a copy
            tied = {"lm_head.weight": embed}
            self.lm_head = self._linear(tied, ["lm_head"], quant=head_quant, dynamic=True)
        del embed
        self.layers = [self._layer(weights, f"model.layers.{i}.") for i in range(self.num_layers)]
        self.cos, self.sin = rope_tables(c, self.head_dim, max_positions, dtype, self.device)
        self.max_positions = max_positions

    def _take(self, weights: dict, name: str) -> torch.Tensor:
        return weights.pop(name).to(device=self.device, dtype=self.dtype).contiguous()

    def _linear(self, weights: dict, names: list[str], row_scale: float = 1.0,
                quant: QuantMode | None = None, dynamic: bool = False):
        """One linear over the row-concatenated weights `names` (biases zero-filled where missing), built
        from full precision so that quantization sees the source values. `dynamic`: an int8 one quantizes
        its activations too (used for the head, where it is measured; the layers keep bf16 activations)."""
        dev = self.device
        ws = [weights.pop(n + ".weight").to(dev).float() for n in names]
        ws[0] = ws[0] * row_scale
        bias = None
        if any(n + ".bias" in weights for n in names):
            bias = torch.cat([weights.pop(n + ".bias").to(dev).float() if n + ".bias" in weights
                              else torch.zeros(x.shape[0], device=dev)
                              for n, x in zip(names, ws, strict=True)])
            bias[: ws[0].shape[0]] *= row_scale
            bias = bias.to(self.dtype)
        return make_linear(torch.cat(ws), bias, self.dtype, self.quant if quant is None else quant,
                           self.group_size, self.prepack, dynamic=dynamic)

    def _layer(self, weights: dict, p: str) -> Layer:
        a, m = p + "self_attn.", p + "mlp."
        nh, nkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        layer = Layer()
        layer.in_norm = self._take(weights, p + "input_layernorm.weight")
        layer.post_norm = self._take(weights, p + "post_attention_layernorm.weight")
        layer.qk_norm = None
        # The attention scale 1/sqrt(head_dim) is folded into q (RoPE is linear, so it commutes):
        # into the qwen3 q_norm weight where there is one, else into q_proj's rows.
        scale = hd ** -0.5
        q_scale = scale
        if a + "q_norm.weight" in weights:  # qwen3: per-head RMSNorm on q and k before RoPE
            q_norm = (weights.pop(a + "q_norm.weight").float() * scale).to(self.dtype)
            k_norm = self._take(weights, a + "k_norm.weight")
            layer.qk_norm = torch.cat([q_norm.expand(nh, hd), k_norm.expand(nkv, hd)]).to(self.device)
            q_scale = 1.0
        layer.qkv = self._linear(weights, [a + "q_proj", a + "k_proj", a + "v_proj"], q_scale)
        layer.o = self._linear(weights, [a + "o_proj"])
        layer.gu = self._linear(weights, [m + "gate_proj", m + "up_proj"])
        layer.down = self._linear(weights, [m + "down_proj"])
        return layer

    def linears(self) -> list:
        """Every projection and the LM head (for inspection: memory, kernels)."""
        projections = [lin for layer in self.layers for lin in (layer.qkv, layer.o, layer.gu, layer.down)]
        return projections + [self.lm_head]

    def weight_bytes(self) -> tuple[int, int]:
        """(bytes a batch-1 decode step reads: every linear as its kernel stores it; bytes held in all: those,
        the dense copies quantized linears keep for many-row calls, the embedding and the norms)."""
        read = sum(lin.nbytes() for lin in self.linears())
        dense = sum(lin.dense.nbytes() for lin in self.linears() if getattr(lin, "dense", None) is not None)
        shares_embed = isinstance(self.lm_head, DenseLinear) and self.lm_head.weight is self.embed
        norms = [self.final_norm] + [t for layer in self.layers for t in (layer.in_norm, layer.post_norm,
                                                                           layer.qk_norm) if t is not None]
        rest = (0 if shares_embed else self.embed.nbytes) + sum(t.nbytes for t in norms)
        return read, read + dense + rest

    # ---- batch preparation (once per step, shared by all layers) ----

    def prepare(self, spans: list[Span], block_size: int) -> ForwardBatch:
        dev = self.device
        ids: list[int] = []
        positions: list[int] = []
        slots: list[int] = []
        logits_rows: list[int] = []
        offsets: list[int] = []
        for span in spans:
            k = len(span.token_ids)
            if k < 1:
                raise EngineError("a span needs at least one token")
            if span.start + k > self.max_positions:
                raise EngineError(
                    f"position {span.start + k - 1} is beyond the RoPE table ({self.max_positions})")
            offsets.append(len(ids))
            ids.extend(span.token_ids)
            pos = range(span.start, span.start + k)
            positions.extend(pos)
            bt = span.block_table
            slots.extend(bt[p // block_size] * block_size + p % block_size for p in pos)
            logits_rows.extend(offsets[-1] + o for o in span.logits_offsets)
        total = len(ids)

        groups: list[AttnGroup] = []
        small = [i for i, s in enumerate(spans) if len(s.token_ids) <= MAX_BATCHED_SPAN]
        for i, span in enumerate(spans):
            if len(span.token_ids) > MAX_BATCHED_SPAN:
                groups.append(self._long_group(span, offsets[i], block_size))
        if small:
            small_spans, small_offsets = [spans[i] for i in small], [offsets[i] for i in small]
            groups.append(self._batched_group(small_spans, small_offsets, block_size))
        identity = len(groups) == 1 and groups[0].valid is None and (
            isinstance(groups[0].token_index, slice) or groups[0].batch * groups[0].qmax == total)
        as_long = lambda xs: torch.tensor(xs, dtype=torch.long, device=dev)  # noqa: E731
        return ForwardBatch(as_long(ids), as_long(positions), as_long(slots), as_long(logits_rows), groups,
                            identity)

    def _context_slots(self, span: Span, block_size: int) -> torch.Tensor:
        ctx = span.start + len(span.token_ids)
        bt = torch.tensor(span.block_table[: (ctx + block_size - 1) // block_size], dtype=torch.long)
        return (bt[:, None] * block_size + torch.arange(block_size)).flatten()[:ctx]

    def _visible(self, q_pos: torch.Tensor, ctx: int, kmax: int) -> torch.Tensor:
        """[len(q_pos), kmax] causal (+ sliding window) visibility of keys 0..kmax-1."""
        key = torch.arange(kmax)
        vis = (key[None, :] <= q_pos[:, None]) & (key[None, :] < ctx)
        if self.sliding_window:
            vis &= key[None, :] > q_pos[:, None] - self.sliding_window
        return vis

    def _bias(self, visible: torch.Tensor) -> torch.Tensor:
        """Additive float32 mask: 0 where visible, -inf elsewhere."""
        bias = torch.zeros(visible.shape, dtype=torch.float32)
        return bias.masked_fill_(~visible, float("-inf")).to(self.device)

    def _long_group(self, span: Span, offset: int, block_size: int) -> AttnGroup:
        k = len(span.token_ids)
        rows = slice(offset, offset + k)
        window_bites = self.sliding_window is not None and span.start + k > self.sliding_window
        if span.start == 0 and not window_bites:  # fresh prompt: attend to the new K/V, plain causal
            return AttnGroup(rows, None, None, True, None, 1, k)
        ctx = span.start + k
        q_pos = torch.arange(span.start, ctx)
        visible = self._visible(q_pos, ctx, ctx)
        if k <= MAX_MATMUL_SPAN:  # e.g. a new chat turn over a cached conversation: matmul attention
            return AttnGroup(rows, self._context_slots(span, block_size)[None].to(self.device),
                             self._bias(visible[None]), False, None, 1, k)
        mask = visible[None, None].to(self.device)  # bool, for SDPA (flash kernel: no k x ctx scores)
        kv_index = self._context_slots(span, block_size)[None].to(self.device)
        return AttnGroup(rows, kv_index, mask, False, None, 1, k)

    def _batched_group(self, spans: list[Span], offsets: list[int], block_size: int) -> AttnGroup:
        b = len(spans)
        qmax = max(len(s.token_ids) for s in spans)
        ctxs = [s.start + len(s.token_ids) for s in spans]
        kmax = max(ctxs)
        dev = self.device
        if b == 1 and qmax == 1 and not self.sliding_window:  # batch-1 decode: every key visible, no padding
            kv_index = self._context_slots(spans[0], block_size)[None].to(dev)
            return AttnGroup(slice(offsets[0], offsets[0] + 1), kv_index, None, False, None, 1, 1,
                             consecutive_start(spans[0].block_table, ctxs[0], block_size))
        kv_index = torch.zeros(b, kmax, dtype=torch.long)
        token_index = torch.zeros(b, qmax, dtype=torch.long)
        valid = torch.zeros(b, qmax, dtype=torch.bool)
        mask = torch.zeros(b, qmax, kmax, dtype=torch.bool)
        for i, (s, off, ctx) in enumerate(zip(spans, offsets, ctxs, strict=True)):
            k = len(s.token_ids)
            kv_index[i, :ctx] = self._context_slots(s, block_size)
            token_index[i, :k] = torch.arange(off, off + k)
            valid[i, :k] = True
            mask[i, :k] = self._visible(torch.arange(s.start, ctx), ctx, kmax)
            mask[i, k:, 0] = True  # padded query rows: anything finite (their output is dropped)
        all_valid = bool(valid.all())
        if qmax == 1 and all(c == kmax for c in ctxs) and not self.sliding_window:
            mask = None  # every key visible to every query
        return AttnGroup(
            token_index.to(dev),
            kv_index.to(dev),
            None if mask is None else self._bias(mask),
            False,
            None if all_valid else valid.flatten().to(dev),
            b,
            qmax,
        )

    # ---- the forward pass ----

    def forward(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        """Logits (float32) for batch.logits_index rows, in that order."""
        with packed_weight_calls():
            return self._forward(batch, kv)

    def _forward(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        nh, nkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        total = batch.input_ids.shape[0]
        x = F.embedding(batch.input_ids, self.embed)
        cos, sin = self.cos[batch.positions], self.sin[batch.positions]
        half = hd // 2
        qk_width = (nh + nkv) * hd
        for i, layer in enumerate(self.layers):
            h = rms_norm(x, layer.in_norm, self.eps)
            qkv = layer.qkv(h)
            qk = qkv[:, :qk_width].view(total, nh + nkv, hd)
            if layer.qk_norm is not None:
                qk = rms_norm(qk, None, self.eps) * layer.qk_norm
            qk = qk * cos + torch.roll(qk, half, dims=-1) * sin
            q, k = qk[:, :nh], qk[:, nh:]
            v = qkv[:, qk_width:].view(total, nkv, hd)
            k_cache, v_cache = kv.k_layers[i], kv.v_layers[i]
            k_cache.index_copy_(1, batch.slots, k.transpose(0, 1))
            v_cache.index_copy_(1, batch.slots, v.transpose(0, 1))
            attn = self._attention(q, k, v, k_cache, v_cache, batch, total)
            x.add_(layer.o(attn))  # x is this pass's own tensor: residual adds in place, no allocation
            h = rms_norm(x, layer.post_norm, self.eps)
            gate, up = layer.gu(h).chunk(2, dim=-1)
            x.add_(layer.down(F.silu(gate).mul_(up)))
        x = x.index_select(0, batch.logits_index)
        x = rms_norm(x, self.final_norm, self.eps)
        return self.lm_head(x).float()

    def _attention(self, q, k, v, k_cache, v_cache, batch: ForwardBatch, total: int) -> torch.Tensor:
        nh, hd = self.num_heads, self.head_dim
        out = None if batch.identity_output else q.new_empty(total, nh * hd)
        for g in batch.groups:
            if g.kv_index is None:  # fresh prompt span: its own K/V, causal (CPU flash kernel)
                o = F.scaled_dot_product_attention(
                    q[g.token_index].transpose(0, 1)[None], k[g.token_index].transpose(0, 1)[None],
                    v[g.token_index].transpose(0, 1)[None], is_causal=True, scale=1.0,
                    enable_gqa=nh != self.num_kv_heads,
                ).transpose(1, 2).reshape(g.batch * g.qmax, nh * hd)
            elif g.mask is not None and g.mask.dtype == torch.bool:  # a long span over cached context
                kv_idx = g.kv_index[0]
                o = F.scaled_dot_product_attention(
                    q[g.token_index].transpose(0, 1)[None], k_cache.index_select(1, kv_idx)[None],
                    v_cache.index_select(1, kv_idx)[None], attn_mask=g.mask, scale=1.0,
                    enable_gqa=nh != self.num_kv_heads,
                ).transpose(1, 2).reshape(g.qmax, nh * hd)
            else:
                o = self._paged_attention(q, k_cache, v_cache, g, out is None)
            if out is None:
                return o
            if isinstance(g.token_index, slice):
                out[g.token_index] = o
            elif g.valid is None:
                out[g.token_index.flatten()] = o
            else:
                out[g.token_index.flatten()[g.valid]] = o[g.valid]
        return out

    def _paged_attention(self, q, k_cache, v_cache, g: AttnGroup, identity: bool) -> torch.Tensor:
        """Spans attending to their cached context, read through the slots in g.kv_index.

        Two matmuls and a softmax with the GQA groups folded into the query axis: for short spans this
        beats SDPA on CPU (about 3x in bf16) and needs no K/V expansion. The gathered K/V come out
        [kv_heads, batch, kmax, head_dim] contiguous, so both matmuls run copy-free."""
        nh, nkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
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
        upcast = kmax <= FP32_ATTENTION_MAX_KEYS and q.dtype != torch.float32 and q.device.type == "cpu"
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
        """Batch-1 decode: one query token sees every key, so each KV head's query heads can stand in for
        SDPA's query axis ([1, kv_heads, group, head_dim] against [1, kv_heads, ctx, head_dim]: no K/V
        expansion, no mask), and a context whose blocks follow each other in the pool is read as a view
        instead of gathered. 2-4x faster than the two matmuls on CPU (2,000 keys, 1.5B and 135M shapes)."""
        nkv, hd = self.num_kv_heads, self.head_dim
        row = q if identity else q[g.token_index]
        qf = row.view(1, nkv, -1, hd)
        if g.kv_start is not None:
            kmax = g.kv_index.shape[1]
            kg, vg = k_cache.narrow(1, g.kv_start, kmax), v_cache.narrow(1, g.kv_start, kmax)
        else:
            flat = g.kv_index[0]
            kg, vg = k_cache.index_select(1, flat), v_cache.index_select(1, flat)
        o = F.scaled_dot_product_attention(qf, kg[None], vg[None], scale=1.0)
        return o.reshape(1, -1)


def consecutive_start(block_table: list[int], ctx: int, block_size: int) -> int | None:
    """The first slot of a context whose blocks follow each other in the pool (engine/free_blocks.py hands
    them out so where it can), else None. Reading such a context as a view saves gathering all its K/V
    once per layer and token: 2,000-token decode steps 8-12% faster on CPU (1.5B and 135M models)."""
    n = (ctx + block_size - 1) // block_size
    first = block_table[0]
    if block_table[n - 1] - first != n - 1 or any(b != first + i for i, b in enumerate(block_table[:n])):
        return None
    return first * block_size


def max_positions_for(hf_config, limit: int | None) -> int:
    model_max = getattr(hf_config, "max_position_embeddings", None) or 4096
    return min(model_max, limit) if limit else model_max
