"""One forward pass's inputs: the spans of the flat batch, their token ids, positions and KV slots, the rows
whose logits are wanted, and the attention plan the chosen backend built for them (shared by all layers)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch

from deltaserve.engine.errors import EngineError


@dataclass
class Span:
    """One sequence's share of a forward pass: k >= 1 new tokens at positions [start, start + k) -- a
    prefill chunk, one decode token, or a speculative verify span."""

    token_ids: list[int]
    start: int  # position of token_ids[0] = number of tokens already in this sequence's KV
    block_table: list[int]
    logits_offsets: list[int] = field(default_factory=list)  # offsets in the span whose logits are wanted


class AttentionPlan(Protocol):
    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
               v_cache: torch.Tensor) -> torch.Tensor: ...


@dataclass
class ForwardBatch:
    input_ids: torch.Tensor  # [T]
    positions: torch.Tensor  # [T]
    slots: torch.Tensor  # [T] pool slot each new token's K/V is written to
    logits_index: torch.Tensor  # [R] rows of the flat batch whose logits are wanted
    attention: AttentionPlan


@dataclass
class FlatSpans:
    """The spans laid end to end, as host lists."""

    ids: list[int]
    positions: list[int]
    slots: list[int]
    logits_rows: list[int]
    offsets: list[int]  # each span's first row


def flatten(spans: list[Span], block_size: int, max_positions: int) -> FlatSpans:
    flat = FlatSpans([], [], [], [], [])
    for span in spans:
        k = len(span.token_ids)
        if k < 1:
            raise EngineError("a span needs at least one token")
        if span.start + k > max_positions:
            raise EngineError(f"position {span.start + k - 1} is beyond the RoPE table ({max_positions})")
        flat.offsets.append(len(flat.ids))
        flat.ids.extend(span.token_ids)
        pos = range(span.start, span.start + k)
        flat.positions.extend(pos)
        bt = span.block_table
        flat.slots.extend(bt[p // block_size] * block_size + p % block_size for p in pos)
        flat.logits_rows.extend(flat.offsets[-1] + o for o in span.logits_offsets)
    return flat
