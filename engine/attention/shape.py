"""What an attention backend needs to know of the model."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class AttentionShape:
    num_heads: int
    num_kv_heads: int
    head_dim: int
    sliding_window: int | None  # keys further back than this are not seen (mistral); None: all
    # The dtype SDPA runs long spans (prefill chunks) in where it differs from the KV cache's; None: the
    # cache's. A float32 cache on a CPU with native bf16 matmuls: its causal kernel over 2,000 queries takes
    # a third of float32's time in bf16 (SmolLM2-135M's 64-dim heads, 2-core Xeon with AMX), casts included.
    long_span_dtype: torch.dtype | None = None
