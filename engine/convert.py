"""A checkpoint's weights as the engine holds them: cast, fused, scaled and quantized, one tensor at a time.

`convert(weights, plan, linears)` yields (name, tensor) pairs and consumes `weights` as it goes (each entry
popped once used), so neither the checkpoint nor the result need be in memory at once: the weight cache
(engine/weight_cache.py) streams them to disk, LlamaModel builds its layers from them. Names are the
model's own: "embed", "final_norm", "layers.{i}.in_norm" / "post_norm" / "qk_norm", and per linear
("lm_head", "layers.{i}.qkv" / "o" / "gu" / "down") the parts quant.quantize_linear makes ("weight", "q",
"scales", "row_sums", "bias"), with its spec in `linears[name]` ({"mode": "tied"}: the head is the
embedding itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from deltaserve.engine.quant import QuantMode, dynamic_int8_works, quantize_linear, weight_levels


@dataclass(frozen=True)
class WeightPlan:
    """Everything the converted tensors depend on besides the checkpoint (the weight cache's key)."""

    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    dtype: torch.dtype
    quant: QuantMode
    group_size: int
    head_quant: QuantMode  # resolved (quant.head_quant_for)
    prepack: bool  # a dense tied head is then a packed copy, not the embedding itself

    def settings(self) -> dict:
        """The plan as JSON-able values; `levels`: a dynamic int8 weight's levels depend on the CPU."""
        dynamic = "w8a8" in (self.quant, self.head_quant) or self.head_quant == "int8"
        levels = weight_levels() if dynamic and dynamic_int8_works() else None
        return {"layers": self.num_layers, "heads": self.num_heads, "kv_heads": self.num_kv_heads,
                "head_dim": self.head_dim, "dtype": str(self.dtype).removeprefix("torch."),
                "quant": self.quant, "group_size": self.group_size, "head_quant": self.head_quant,
                "prepack": self.prepack, "levels": levels}


def convert(weights, plan: WeightPlan, linears: dict) -> Iterator[tuple[str, torch.Tensor]]:
    dt = plan.dtype
    embed = weights.pop("model.embed_tokens.weight")
    yield "embed", embed.to(dt).contiguous()
    yield "final_norm", weights.pop("model.norm.weight").to(dt).contiguous()
    if "lm_head.weight" in weights:
        yield from _linear(weights, "lm_head", ["lm_head"], plan, plan.head_quant, dynamic=True, out=linears)
    elif plan.head_quant == "none" and not plan.prepack:
        linears["lm_head"] = {"mode": "tied"}  # the lookup table itself
    else:  # tied, but packed or quantized: a copy
        tied = {"lm_head.weight": embed}
        yield from _linear(tied, "lm_head", ["lm_head"], plan, plan.head_quant, dynamic=True, out=linears)
    del embed
    for i in range(plan.num_layers):
        yield from _layer(weights, i, plan, linears)


def _layer(weights, i: int, plan: WeightPlan, linears: dict) -> Iterator[tuple[str, torch.Tensor]]:
    p, out = f"model.layers.{i}.", f"layers.{i}."
    a, m = p + "self_attn.", p + "mlp."
    nh, nkv, hd, dt = plan.num_heads, plan.num_kv_heads, plan.head_dim, plan.dtype
    yield out + "in_norm", weights.pop(p + "input_layernorm.weight").to(dt).contiguous()
    yield out + "post_norm", weights.pop(p + "post_attention_layernorm.weight").to(dt).contiguous()
    # The attention scale 1/sqrt(head_dim) is folded into q (RoPE is linear, so it commutes):
    # into the qwen3 q_norm weight where there is one, else into q_proj's rows.
    scale = hd ** -0.5
    q_scale = scale
    if a + "q_norm.weight" in weights:  # qwen3: per-head RMSNorm on q and k before RoPE
        q_norm = (weights.pop(a + "q_norm.weight").float() * scale).to(dt)
        k_norm = weights.pop(a + "k_norm.weight").to(dt)
        yield out + "qk_norm", torch.cat([q_norm.expand(nh, hd), k_norm.expand(nkv, hd)]).contiguous()
        q_scale = 1.0
    q = plan.quant
    yield from _linear(weights, out + "qkv", [a + "q_proj", a + "k_proj", a + "v_proj"], plan, q, q_scale,
                       out=linears)
    yield from _linear(weights, out + "o", [a + "o_proj"], plan, q, out=linears)
    yield from _linear(weights, out + "gu", [m + "gate_proj", m + "up_proj"], plan, q, out=linears)
    yield from _linear(weights, out + "down", [m + "down_proj"], plan, q, out=linears)


def _linear(weights, name: str, sources: list[str], plan: WeightPlan, quant: QuantMode,
            row_scale: float = 1.0, dynamic: bool = False,
            out: dict | None = None) -> Iterator[tuple[str, torch.Tensor]]:
    """One linear over the row-concatenated weights `sources` (biases zero-filled where missing), quantized
    from full precision so that quantization sees the source values. `dynamic`: an int8 one quantizes its
    activations too (used for the head, where it is measured; the layers keep bf16 activations)."""
    ws = [weights.pop(n + ".weight") for n in sources]
    if row_scale != 1.0:
        ws[0] = ws[0].float() * row_scale
    bias = None
    if any(n + ".bias" in weights for n in sources):
        bias = torch.cat([weights.pop(n + ".bias").float() if n + ".bias" in weights
                          else torch.zeros(x.shape[0], device=x.device)
                          for n, x in zip(sources, ws, strict=True)])
        bias[: ws[0].shape[0]] *= row_scale
        bias = bias.to(plan.dtype)
    if len({w.dtype for w in ws}) > 1:
        ws = [w.float() for w in ws]
    weight = ws[0] if len(ws) == 1 else torch.cat(ws)  # in the source dtype: quantizing takes float32 rows
    del ws  # a chunk at a time, so a 150k-row head never needs a float32 copy whole
    spec, parts = quantize_linear(weight, bias, plan.dtype, quant, plan.group_size, dynamic)
    out[name] = spec
    for part, t in parts.items():
        yield f"{name}.{part}", t
