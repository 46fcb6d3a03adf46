"""Decode steps as captured CUDA graphs: one per batch-size bucket (1, 2, 4, 8, ...), replayed each step.

A plain decode step launches ~25 kernels per layer (~700 for a 28-layer model), each a few microseconds of
host time, while the GPU needs ~2 ms for the whole token at 1.5B: the launches, not the GPU, set the pace.
A graph replays them all in one launch. It needs every input at a fixed address and shape: the step's
token ids, positions, slots and attention buffers (engine/attention/flex.py StaticDecodePlan) are copied
into static buffers sized for the bucket; rows beyond the step's batch use the pool's scratch slot.

On CPU the same buffers run eagerly (no capture), which is how CI tests the logic against the dynamic
path. Sampling stays outside the graph (its parameters change per step).
"""

from __future__ import annotations

import logging

import torch

from deltaserve.engine.attention.flex import QUERY_BLOCK, StaticDecodePlan
from deltaserve.engine.forward_batch import ForwardBatch, Span, flatten
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.model import LlamaModel
from deltaserve.engine.staging import to_device

log = logging.getLogger(__name__)
BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


def bucket_for(batch: int) -> int | None:
    return next((b for b in BUCKETS if b >= batch), None)


class DecodeGraph:
    """One bucket's decode forward on static buffers; captured as a CUDA graph on CUDA."""

    def __init__(self, model: LlamaModel, kv: KVCache, rows: int, block_size: int, compiled: bool,
                 pool=None):
        self.model, self.kv, self.rows, self.block_size = model, kv, rows, block_size
        dev = model.device
        self.plan = StaticDecodePlan(model.attention_shape, rows, block_size, kv.num_slots, kv.scratch_slot,
                                     dev, compiled)
        zeros = lambda: torch.zeros(rows, dtype=torch.long, device=dev)  # noqa: E731
        self.batch = ForwardBatch(zeros(), zeros(), torch.full((rows,), kv.scratch_slot, device=dev),
                                  torch.arange(rows, device=dev), self.plan)
        self.graph: torch.cuda.CUDAGraph | None = None
        self.logits: torch.Tensor | None = None
        if dev.type == "cuda":
            self._capture(pool)

    def _capture(self, pool) -> None:
        """Warm up (compiles the kernels for this shape) on a side stream, then capture one forward."""
        self.plan.load(self.plan.padded([]))
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(2):
                self.model.forward(self.batch, self.kv)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool), torch.inference_mode():
            self.logits = self.model.forward(self.batch, self.kv)
        self.graph = graph

    def run(self, spans: list[Span]) -> torch.Tensor:
        """Float32 logits [len(spans), vocab] of one decode step (every span: one token, its logits)."""
        n = len(spans)
        padded = self.plan.padded(spans)
        flat = flatten(padded, self.block_size, self.model.max_positions)
        ids, positions, slots = to_device(self.model.device, torch.long, flat.ids, flat.positions, flat.slots)
        self.batch.input_ids.copy_(ids)
        self.batch.positions.copy_(positions)
        self.batch.slots.copy_(slots)
        self.plan.load(padded)
        if self.graph is None:
            return self.model.forward(self.batch, self.kv)[:n]
        self.graph.replay()
        return self.logits[:n]


class DecodeGraphs:
    """The buckets' graphs, each built (captured) on first use, sharing one memory pool."""

    def __init__(self, model: LlamaModel, kv: KVCache, block_size: int, compiled: bool, max_batch: int):
        self.model, self.kv, self.block_size, self.compiled = model, kv, block_size, compiled
        self.max_batch = min(max_batch, QUERY_BLOCK, BUCKETS[-1])
        self.graphs: dict[int, DecodeGraph] = {}
        self.pool = torch.cuda.graph_pool_handle() if model.device.type == "cuda" else None
        self.failed = False

    def accepts(self, spans: list[Span]) -> bool:
        """Plain decode (one token per span, its logits wanted) within the largest bucket."""
        return (not self.failed and len(spans) <= self.max_batch
                and all(len(s.token_ids) == 1 and s.logits_offsets == [0] for s in spans))

    def run(self, spans: list[Span]) -> torch.Tensor | None:
        """The step's logits, or None when no graph could be built (the caller runs the plain forward)."""
        rows = bucket_for(len(spans))
        graph = self.graphs.get(rows)
        if graph is None:
            try:
                graph = self.graphs[rows] = DecodeGraph(self.model, self.kv, rows, self.block_size,
                                                        self.compiled, self.pool)
            except Exception:  # a GPU/torch combination that cannot capture: decode without graphs
                log.exception("capturing the decode graph for batch %d failed; decoding without graphs", rows)
                self.failed = True
                return None
        return graph.run(spans)
