"""ModelRunner: one engine step's device work. Prepare the inputs (one host-to-device copy), run the model,
sample every wanted row on the device, and bring the tokens back in one device-to-host copy: the only point
where the host waits for the device in a step.
"""

from __future__ import annotations

import contextlib

import torch

from deltaserve.engine.attention import Attention, AttentionBackend
from deltaserve.engine.background_compile import BackgroundCompiledDecode
from deltaserve.engine.compiled_decode import CompiledDecode
from deltaserve.engine.config import CompileDecode
from deltaserve.engine.decode_graphs import DecodeGraphs
from deltaserve.engine.forward_batch import ForwardBatch, Span, flatten
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.model import LlamaModel
from deltaserve.engine.sampler import Sampled, SamplingBatch, SamplingParams, sample_rows
from deltaserve.engine.staging import to_device

# BLAS runs one kernel for this many rows and more (measured here, float32 on an AVX-512 CPU: 1-15 rows took
# other paths, whose per-row results differ from the many-row kernel's)
DETERMINISTIC_MIN_ROWS = 16


class ModelRunner:
    def __init__(self, model: LlamaModel, kv: KVCache, block_size: int, backend: AttentionBackend = "auto",
                 decode_graphs: bool | None = None, max_batch: int = 16,
                 compile_decode: CompileDecode = "off"):
        self.model, self.kv, self.block_size = model, kv, block_size
        self.device = model.device
        if compile_decode == "on" and self.device.type != "cpu":
            raise ValueError("compile_decode compiles CPU decode steps; on CUDA they replay as CUDA graphs "
                             "(decode_graphs)")
        self.attention = Attention(backend, model.attention_shape, block_size, kv.num_slots, self.device)
        if self.attention.backend == "deterministic":
            model.pad_linear_rows(DETERMINISTIC_MIN_ROWS)
        flex = self.attention.backend == "flex"
        use_graphs = self.device.type == "cuda" and flex if decode_graphs is None else decode_graphs
        if use_graphs and not flex:
            raise ValueError("decode graphs need the flex attention backend (attention='flex')")
        self.graphs = (DecodeGraphs(model, kv, block_size, self.attention.compiled, max_batch) if use_graphs
                       else None)
        self.compiled = self._compiled_decode(compile_decode)
        self.compile_decode = compile_decode if self.compiled is not None else "off"  # what it does here

    def _compiled_decode(self, mode: CompileDecode) -> CompiledDecode | BackgroundCompiledDecode | None:
        if mode == "on":
            return CompiledDecode(self.model)
        # "auto" off CPU: CUDA graphs do this there. Blocks of 3 slots at least: the scratch step reads 3 keys
        # or more, so that dynamo does not take the context's length for a constant 0 or 1.
        if mode == "off" or self.device.type != "cpu" or self.block_size < 3:
            return None
        # what the background compile traces: one token in the pool's scratch block, which no sequence owns;
        # its tensors made in inference mode, as a step's are (dynamo's guards check it)
        with torch.inference_mode():
            scratch = self.prepare([Span([0], self.block_size - 1, [self.kv.num_blocks], [0])])
        if not CompiledDecode.takes(scratch):  # e.g. deterministic attention
            return None
        return BackgroundCompiledDecode(self.model, self.kv, scratch)

    def prepare(self, spans: list[Span]) -> ForwardBatch:
        flat = flatten(spans, self.block_size, self.model.max_positions)
        ids, positions, slots, logits_rows = to_device(self.device, torch.long, flat.ids, flat.positions,
                                                       flat.slots, flat.logits_rows)
        return ForwardBatch(ids, positions, slots, logits_rows, self.attention.plan(spans, flat.offsets))

    def logits(self, spans: list[Span]) -> torch.Tensor:
        """Float32 logits [R, vocab] of every span's wanted rows, in order (no sampling)."""
        stepping = self.compiled.stepping() if self.compiled is not None else contextlib.nullcontext()
        with torch.inference_mode(), stepping:
            if self.graphs is not None and self.graphs.accepts(spans):
                logits = self.graphs.run(spans)
                if logits is not None:
                    return logits
            batch = self.prepare(spans)
            if self.compiled is not None and self.compiled.accepts(batch):
                logits = self.compiled.run(batch, self.kv)
                if logits is not None:
                    return logits
            return self.model.forward(batch, self.kv)

    def run(self, spans: list[Span], params: list[SamplingParams], generators: list[torch.Generator | None],
            masks: torch.Tensor | None = None, counted: list[list[int]] | None = None) -> list[int]:
        """The sampled token of every wanted row (params and generators: one per row, in order; masks: the
        rows' allowed-token bitmasks, or None; counted: the tokens each row's penalties count)."""
        return self.sample(spans, SamplingBatch(params, generators, self.device, masks, counted)).tokens

    def sample(self, spans: list[Span], batch: SamplingBatch) -> Sampled:
        """Every wanted row's token, and its logprobs where its request asked for them (batch: the rows'
        sampling parameters, in order)."""
        logits = self.logits(spans)
        with torch.inference_mode():
            return batch.unpack(sample_rows(logits, batch).tolist())  # the step's one device-to-host copy
