"""What an attention backend needs to know of the model."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AttentionShape:
    num_heads: int
    num_kv_heads: int
    head_dim: int
    sliding_window: int | None  # keys further back than this are not seen (mistral); None: all
