"""Batch-1 decode steps through torch.compile on CPU (EngineConfig.compile_decode "on"; "auto" compiles it in
the background, engine/background_compile.py).

A batch-1 decode step of a small model is mostly small ops: SmolLM2-135M runs ~20 of them per layer around its
four matmuls, each a few microseconds of dispatch, ~2.5 ms of its ~10 ms token on a 2-core EPYC. Inductor
fuses them into a few C++ kernels per layer (the CPU's counterpart of engine/decode_graphs.py's CUDA graphs).

The linears stay torch's own kernels, each seen by the compiler as one opaque op (`deltaserve::linear`):
fbgemm's packed weights are a TorchScript object dynamo cannot trace, and the int4 / oneDNN kernels are
already what inductor would call. The op finds its linear by a handle in a registry of weak references, so
a model dropped is not kept alive by it.

Only steps whose attention plan reads the context as one view of the pool (CpuAttentionPlan.decode_view) go
through the compiled forward; the context length is a dynamic size, so growing contexts do not recompile.
With "on" the first such step compiles (tens of seconds on 2 cores; a few with inductor's on-disk cache
warm). A compile that fails logs why and leaves decode eager.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import weakref

import torch

from deltaserve.engine.attention.cpu import CpuAttentionPlan
from deltaserve.engine.forward_batch import ForwardBatch
from deltaserve.engine.kv_cache import KVCache

log = logging.getLogger(__name__)

# the context's first slot and length (CpuAttentionPlan.decode_view) as sizes of the graph, not constants:
# one compile serves every context
CONTEXT_SOURCES = "L['batch'].attention.decode_view[0],L['batch'].attention.decode_view[1]"
# Inductor's SDPA pattern off: on CPU the model's two matmuls read float32 K/V faster than SDPA's flash kernel
# it would put in their place; the kernels called from a C++ wrapper rather than Python. SmolLM2-135M, 2
# threads, one process (ms a token at ~50 / ~2,000 keys): Python wrapper 8.80 / 14.91, C++ wrapper 8.22 /
# 14.64, C++ wrapper with the SDPA pattern 8.51 / 15.08, eager 9.85 / 16.32. The C++ wrapper's compile is
# longer (~30 s against ~20 on 2 cores).
COMPILE_OPTIONS = {"pattern_matcher": False, "cpp_wrapper": True}
_LINEARS: dict[int, weakref.ReferenceType] = {}
_HANDLES = itertools.count()

_lib = torch.library.Library("deltaserve", "DEF")
_lib.define("linear(Tensor x, int handle) -> Tensor")


def _run_linear(x: torch.Tensor, handle: int) -> torch.Tensor:
    return _LINEARS[handle]().linear(x)


def _linear_shape(x: torch.Tensor, handle: int) -> torch.Tensor:
    return x.new_empty(x.shape[0], _LINEARS[handle]().out_features)


_lib.impl("linear", _run_linear, "CPU")
torch.library.register_fake("deltaserve::linear", _linear_shape, lib=_lib)


class OpaqueLinear:
    """A linear that runs as itself eagerly and as one `deltaserve::linear` op inside a compiled graph.
    The output has the input's dtype, as every linear of the model (engine/linear.py, engine/quant.py)."""

    __slots__ = ("linear", "out_features", "handle", "__weakref__")

    def __init__(self, linear, in_features: int, dtype: torch.dtype):
        self.linear = linear
        with torch.inference_mode():
            self.out_features = linear(torch.zeros(1, in_features, dtype=dtype)).shape[1]
        self.handle = next(_HANDLES)
        _LINEARS[self.handle] = weakref.ref(self, lambda _, h=self.handle: _LINEARS.pop(h, None))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if torch.compiler.is_compiling():
            return torch.ops.deltaserve.linear(x, self.handle)
        return self.linear(x)

    def nbytes(self) -> int:
        return self.linear.nbytes()


def make_linears_opaque(model) -> None:
    """Every projection and the LM head of `model` (engine/model.py LlamaModel) as an OpaqueLinear."""
    hidden, attn = model.hidden_size, model.num_heads * model.head_dim
    dt = model.layer_dtype
    for layer in model.layers:
        layer.qkv, layer.o, layer.gu = (OpaqueLinear(layer.qkv, hidden, dt), OpaqueLinear(layer.o, attn, dt),
                                        OpaqueLinear(layer.gu, hidden, dt))
        layer.down = OpaqueLinear(layer.down, layer.gu.out_features // 2, dt)
    model.lm_head = OpaqueLinear(model.lm_head, hidden, model.head_dtype)


class CompiledDecode:
    """The model's forward compiled for batch-1 decode steps over a context read in place."""

    def __init__(self, model):
        make_linears_opaque(model)
        self.model = model
        self.forward = torch.compile(model._forward, fullgraph=True, dynamic=False, options=COMPILE_OPTIONS)
        self.failed = False

    def stepping(self) -> contextlib.AbstractContextManager:
        """Around each step's forward (background_compile.py's waits on it; nothing here)."""
        return contextlib.nullcontext()

    @staticmethod
    def takes(batch: ForwardBatch) -> bool:
        """Whether this kind of step goes through the compiled forward: batch-1 decode over one view."""
        plan = batch.attention
        return isinstance(plan, CpuAttentionPlan) and plan.decode_view is not None

    def accepts(self, batch: ForwardBatch) -> bool:
        return not self.failed and self.takes(batch)

    def run(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor | None:
        """The step's logits, or None when the compile failed (the caller runs the eager forward)."""
        try:
            with torch.compiler.config.patch(dynamic_sources=CONTEXT_SOURCES):
                return self.model.forward(batch, kv, self.forward)
        except Exception:  # no C++ compiler, or a torch that cannot compile this graph: stay eager
            log.exception("compiling the decode step failed; decoding eagerly")
            self.failed = True
            return None
