"""Our own Llama-family forward (llama, mistral, qwen2, qwen3) over the paged KV cache.

One call runs a *flat batch* (engine/forward_batch.py): every sequence contributes a span of new tokens and
asks for the logits of some of them. New K/V are written to the sequence's slots first, then the batch's
attention plan (engine/attention/) reads each span's whole context from the pool. Speed notes: q/k/v and
gate/up are fused into one matmul each, RoPE tables are precomputed, q and k are rotated in one op.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import torch
import torch.nn.functional as F

from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.convert import WeightPlan
from deltaserve.engine.errors import EngineError
from deltaserve.engine.forward_batch import ForwardBatch
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.linear import DenseLinear, prepack_works
from deltaserve.engine.packing import Packer
from deltaserve.engine.quant import (
    HeadQuant,
    QuantMode,
    head_quant_for,
    linear_from_parts,
    linear_input_dtype,
    packed_weight_calls,
)
from deltaserve.engine.weight_cache import ConvertedWeights, Scoped, converted_weights

SUPPORTED_ARCHS = ("llama", "mistral", "qwen2", "qwen3")
# Float32 K/V (where the linears' outputs are float32: w8a8 on CPU) up to this head_dim, on CPUs without AMX:
# there CPU SDPA over a bf16 cache took 1.35x the time of a float32 one for SmolLM2-135M's 64-dim heads at
# 2,000 keys, 1.08x for the 1.5B model's 128-dim ones (1 thread, 2-core EPYC), where float32 would double the
# KV memory for ~nothing. With AMX, torch's attention kernels run bf16 on its tiles and a bf16 cache is
# read in half the bytes: SmolLM2-135M decoded at 23.3 against 25.6 ms a token at 2,000 keys, and its
# 2,000-token prefill's causal kernel took a third of float32's time (2 threads, 2-core Xeon with AMX).
FP32_KV_MAX_HEAD_DIM = 64
# A longer pass (a prefill chunk) runs its MLP this many rows at a time, so its intermediates stay small: the
# 1.5B model's gate/up output in float32 is 147 MB at 2,048 rows, 37 MB at 512 (peak memory of a 2,000-token
# prefill; the quantized kernels run 256 rows at a time anyway)
MLP_CHUNK_ROWS = 512

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


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None, eps: float,
             dtype: torch.dtype | None = None) -> torch.Tensor:
    """F.rms_norm over the last dim, bit for bit, in 5 ops for float32 on CPU where torch's is a composite of
    ~10 (its Python-float scalars each wrapped in a tensor): 22 us against 36 a call on a 2-core EPYC, 61
    calls a SmolLM2 token. Same steps in the same order: x * rsqrt(sum(x * x) / n + eps), then * weight.
    `dtype`: the result cast to it (the next linear's input dtype), where it differs."""
    if x.dtype != torch.float32 or x.device.type != "cpu" or torch.compiler.is_compiling():  # compiled: fused
        y = F.rms_norm(x, x.shape[-1:], weight, eps)
    else:
        n, eps_t = _norm_constants(x.shape[-1], eps)
        y = torch.mul(x, torch.addcdiv(eps_t, (x * x).sum(-1, keepdim=True), n).rsqrt_())
        if weight is not None:
            y.mul_(weight)
    return y if dtype is None or dtype == y.dtype else y.to(dtype)


def mlp(layer: Layer, h: torch.Tensor) -> torch.Tensor:
    """SwiGLU: down(silu(gate) * up), gate and up from one fused matmul."""
    gate, up = layer.gu(h).chunk(2, dim=-1)
    return layer.down(F.silu(gate).mul_(up))


class RowPadded:
    """A linear called with at least `rows` rows (see LlamaModel.pad_linear_rows)."""

    def __init__(self, linear, rows: int):
        self.linear, self.rows = linear, rows

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[0]
        if n >= self.rows:
            return self.linear(x)
        return self.linear(torch.cat([x, x.new_zeros(self.rows - n, x.shape[1])]))[:n]

    def nbytes(self) -> int:
        return self.linear.nbytes()


class Layer:
    __slots__ = ("in_norm", "qkv", "qk_norm", "o", "post_norm", "gu", "down")


def cpu_has_amx() -> bool:
    """This CPU has AMX tiles, which torch's CPU attention kernels use for bf16 (oneDNN's brgemm)."""
    has_amx = getattr(torch.cpu, "_is_amx_tile_supported", None)  # torch's own check; private, so guarded
    return bool(has_amx and has_amx())


class LlamaModel:
    """Weights as plain tensors and linear callables (engine/linear.py, engine/quant.py), and a forward
    pass that is just a loop over layers. `quant` stores the projections int4/int8, `head_quant` the LM
    head (engine/quant.py's head_quant_for resolves "auto"). The model consumes `weights` (a checkpoint's
    HF-named tensors): engine/convert.py turns them into the model's own, one at a time, and
    engine/weight_cache.py keeps those on disk for the next start where `weights` names its checkpoint
    (loader.CheckpointWeights); the layers are built from them here."""

    def __init__(self, hf_config, weights: Mapping[str, torch.Tensor], dtype: torch.dtype, device,
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

        plan = WeightPlan(self.num_layers, self.num_heads, self.num_kv_heads, self.head_dim, dtype, quant,
                          group_size, head_quant_for(quant, head_quant, self.device), self.prepack)
        stored = converted_weights(weights, plan)
        self.weights_file = stored.path  # the weight cache file the model was read from, or None
        self.embed = self._take(stored, "embed")  # on CPU a view of that file: only the rows read are loaded
        self.final_norm = self._take(stored, "final_norm")
        with Packer() as packer:  # fbgemm packs on worker threads while the next weights are read
            self.lm_head = self._linear(stored, "lm_head", packer)
            self.layers = [self._layer(stored, f"layers.{i}.", packer) for i in range(self.num_layers)]
        # Quantized on CPU, the residual stream and its norms run in float32 (torch's bf16 rms_norm is a
        # composite of ~10 ops; unquantized bf16 keeps HF's bf16 numerics); a linear takes its input in its
        # kernel's dtype (linear_input_dtype); the KV cache keeps `dtype`
        self.act_dtype = torch.float32 if self.device.type == "cpu" and quant != "none" else dtype
        self.layer_dtype = linear_input_dtype(self.linears()[:-1], dtype)
        self.head_dtype = linear_input_dtype([self.lm_head], dtype)
        self._norms_to(self.act_dtype, self.layer_dtype)
        # the KV cache: float32 where the layers hand attention float32 anyway and bf16 attention is slow
        # (FP32_KV_MAX_HEAD_DIM: small heads on a CPU without AMX), else `dtype`
        slow_bf16_heads = (self.head_dim <= FP32_KV_MAX_HEAD_DIM and self.device.type == "cpu"
                           and not cpu_has_amx())
        self.kv_dtype = torch.float32 if self.layer_dtype == torch.float32 and slow_bf16_heads else dtype
        self.cos, self.sin = rope_tables(c, self.head_dim, max_positions, self.layer_dtype, self.device)
        self.max_positions = max_positions

    def _norms_to(self, residual: torch.dtype, linear_out: torch.dtype) -> None:
        """The residual stream's norm weights in its dtype, q/k's (qwen3) in the one they come out in."""
        self.final_norm = self.final_norm.to(residual)
        for layer in self.layers:
            layer.in_norm, layer.post_norm = layer.in_norm.to(residual), layer.post_norm.to(residual)
            if layer.qk_norm is not None:
                layer.qk_norm = layer.qk_norm.to(linear_out)

    def _take(self, stored: ConvertedWeights, name: str) -> torch.Tensor:
        return stored.tensors.view(name).to(self.device)

    def _linear(self, stored: ConvertedWeights, name: str, packer: Packer | None = None):
        spec = stored.linears[name]
        if spec["mode"] == "tied":
            return DenseLinear(self.embed)  # the lookup table itself
        return linear_from_parts(Scoped(stored.tensors, name), spec, self.dtype, self.device, self.prepack,
                                 packer=packer)

    def _layer(self, stored: ConvertedWeights, p: str, packer: Packer | None = None) -> Layer:
        layer = Layer()
        layer.in_norm = self._take(stored, p + "in_norm")
        layer.post_norm = self._take(stored, p + "post_norm")
        layer.qk_norm = self._take(stored, p + "qk_norm") if p + "qk_norm" in stored.tensors else None
        layer.qkv = self._linear(stored, p + "qkv", packer)  # q's rows carry the attention scale (convert.py)
        layer.o = self._linear(stored, p + "o", packer)
        layer.gu = self._linear(stored, p + "gu", packer)
        layer.down = self._linear(stored, p + "down", packer)
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

    def pad_linear_rows(self, rows: int) -> None:
        """Every projection and the head take at least `rows` rows (zeros added, dropped after): BLAS runs a
        different kernel (another summation order) for a few rows than for many, so without this a token's
        logits would depend on how many tokens share its pass (deterministic mode)."""
        for layer in self.layers:
            layer.qkv, layer.o, layer.gu, layer.down = (RowPadded(lin, rows) for lin in (
                layer.qkv, layer.o, layer.gu, layer.down))
        self.lm_head = RowPadded(self.lm_head, rows)

    @property
    def attention_shape(self) -> AttentionShape:
        return AttentionShape(self.num_heads, self.num_kv_heads, self.head_dim, self.sliding_window)

    # ---- the forward pass ----

    def forward(self, batch: ForwardBatch, kv: KVCache, body=None) -> torch.Tensor:
        """Logits (float32) for batch.logits_index rows, in that order (body: a compiled _forward to run
        instead, engine/compiled_decode.py)."""
        with packed_weight_calls():
            return (body or self._forward)(batch, kv)

    def _forward(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor:
        nh, nkv, hd = self.num_heads, self.num_kv_heads, self.head_dim
        total = batch.input_ids.shape[0]
        x = F.embedding(batch.input_ids, self.embed)
        if x.dtype != self.act_dtype:
            x = x.to(self.act_dtype)
        cos, sin = self.cos[batch.positions], self.sin[batch.positions]
        half = hd // 2
        qkv_widths, heads = ((nh + nkv) * hd, nkv * hd), (nh, nkv)
        lin_dtype = self.layer_dtype
        for i, layer in enumerate(self.layers):
            h = rms_norm(x, layer.in_norm, self.eps, lin_dtype)
            qk, v = layer.qkv(h).split_with_sizes(qkv_widths, 1)
            qk = qk.view(total, nh + nkv, hd)
            if layer.qk_norm is not None:
                qk = rms_norm(qk, None, self.eps) * layer.qk_norm
            qk = qk * cos + torch.roll(qk, half, dims=-1) * sin
            v = v.view(total, nkv, hd)
            k_cache, v_cache = kv.k_layers[i], kv.v_layers[i]
            if qk.dtype != k_cache.dtype:  # float32 linear outputs: KV and attention in the cache's dtype
                qk, v = qk.to(k_cache.dtype), v.to(k_cache.dtype)
            q, k = qk.split_with_sizes(heads, 1)
            k_cache.index_copy_(1, batch.slots, k.transpose(0, 1))
            v_cache.index_copy_(1, batch.slots, v.transpose(0, 1))
            attn = batch.attention.attend(q, k, v, k_cache, v_cache)
            if attn.dtype != lin_dtype:
                attn = attn.to(lin_dtype)
            x.add_(layer.o(attn))  # x is this pass's own tensor: residual adds in place, no allocation
            h = rms_norm(x, layer.post_norm, self.eps, lin_dtype)
            if total <= MLP_CHUNK_ROWS:
                x.add_(mlp(layer, h))
            else:
                for r in range(0, total, MLP_CHUNK_ROWS):
                    x[r:r + MLP_CHUNK_ROWS].add_(mlp(layer, h[r:r + MLP_CHUNK_ROWS]))
        x = x.index_select(0, batch.logits_index)
        x = rms_norm(x, self.final_norm, self.eps, self.head_dtype)
        return self.lm_head(x).float()


def max_positions_for(hf_config, limit: int | None) -> int:
    model_max = getattr(hf_config, "max_position_embeddings", None) or 4096
    return min(model_max, limit) if limit else model_max
