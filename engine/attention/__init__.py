"""Attention backends over the paged KV pool. Each builds, once per step, a plan that every layer runs.

  "gather": the CPU kernels (engine/attention/cpu.py): K/V gathered per group, matmuls or SDPA; the CPU
            default (faster there than eager flex, which is a dense reference, or compiled flex's start-up).
  "flex":   torch's flex_attention over the pool in place (engine/attention/flex.py), compiled to Triton on
            CUDA: the CUDA default. On CPU it runs eagerly (tests: the CUDA path's logic, run in CI).
  "deterministic": fixed shapes and summation orders, so a query's output depends on its context alone
            (engine/attention/deterministic.py; EngineConfig.deterministic picks it).
"""

from __future__ import annotations

from typing import Literal

import torch

from deltaserve.engine.attention.cpu import CpuAttentionPlan
from deltaserve.engine.attention.deterministic import DeterministicAttentionPlan
from deltaserve.engine.attention.flex import FlexAttentionPlan
from deltaserve.engine.attention.shape import AttentionShape
from deltaserve.engine.forward_batch import AttentionPlan, Span

AttentionBackend = Literal["auto", "gather", "flex", "deterministic"]


def resolve_backend(backend: AttentionBackend, device: torch.device) -> str:
    if backend == "auto":
        return "flex" if device.type == "cuda" else "gather"
    return backend


class Attention:
    """A backend bound to one model shape, pool and device: plan(spans, offsets) for each step."""

    def __init__(self, backend: AttentionBackend, shape: AttentionShape, block_size: int, num_slots: int,
                 device: torch.device, compiled: bool | None = None):
        self.backend = resolve_backend(backend, device)
        self.shape, self.block_size, self.num_slots, self.device = shape, block_size, num_slots, device
        self.compiled = device.type == "cuda" if compiled is None else compiled

    def plan(self, spans: list[Span], offsets: list[int]) -> AttentionPlan:
        if self.backend == "flex":
            return FlexAttentionPlan(self.shape, spans, offsets, self.block_size, self.num_slots, self.device,
                                     self.compiled)
        if self.backend == "deterministic":
            return DeterministicAttentionPlan(self.shape, spans, offsets, self.block_size, self.device)
        return CpuAttentionPlan(self.shape, spans, offsets, self.block_size, self.device)


__all__ = ["Attention", "AttentionBackend", "AttentionShape", "resolve_backend"]
