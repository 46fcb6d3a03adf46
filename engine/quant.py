"""Quantized linears on CPU, run by torch's own kernels.

- int4: groups of `group_size` input features share a scale and a zero point (asymmetric min/max
  rounding), the layout of `torch.ops.aten._weight_int4pack_mm_for_cpu`: w = (q - 8) * scale + zero,
  q in 0..15. Group 32 is the block of GGUF's Q4_0/Q4_1/Q4_K, so a 4-bit GGUF comes through almost
  unchanged (its blocks already hold 16 levels between their min and max).
- int8: one symmetric scale per output channel. Where fbgemm runs (x86) the activations are quantized too,
  each row with its own scale (`dynamic`), and fbgemm's int8 GEMM multiplies; elsewhere the weight-only
  kernel `torch.ops.aten._weight_int8pack_mm` does. Each row is quantized on its own range and integer
  accumulation is exact, so the rows beside it do not change a row's result. A row alone (fbgemm's own
  dynamic linear) and a row in a batch (dynamic_int8_mm's grid) use the same levels, except that a value
  within float rounding of the midpoint between two levels may round the other way (typically 7e-7
  relative apart; one such value in a 64-input test row moved it 2e-3).

Batch-1 decode reads every weight once per token, so it runs at memory bandwidth and the 2-4x smaller
weights are 2-4x less to read, where the kernel keeps up. Which kernel does is the CPU's business
(`preferred_quant`): torch's int4 kernel is compute-bound on the 2-core machines measured (3x fbgemm's
time for the 1.5B model's layers on an AVX2-only EPYC, 1.15x on an AVX-512 Xeon), fbgemm's int8 GEMM
runs at the memory bandwidth (README, "CPU decode").
The weight-only kernels are slow for many rows, so they keep a dense copy of their *dequantized* weight
and hand calls of more than `max_rows` rows to it: prefill keeps its speed and both paths compute the
same model. A dynamic int8 linear keeps none: fbgemm's GEMM, 256 rows at a time, ran the 1.5B model's
layers 15-35% faster than oneDNN's prepacked bf16 from 9 to 2,048 rows (1 thread, 2-core AVX-512 EPYC),
and the copy doubled the weights' memory (9.6 GB peak for the 1.5B model with it).
What a linear stores (`quantize_parts`: int8/int4 weights, scales, row sums) is what the weight cache
(engine/weight_cache.py) keeps on disk; the kernels' packings are made from it at load (`from_parts`).
The int4 and int8 weight-only kernels' scales are in the activation dtype (the kernels require it).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings
from typing import Literal

import torch

from deltaserve.engine.errors import EngineError
from deltaserve.engine.linear import DenseLinear, prepack_works
from deltaserve.engine.packing import Packer
from deltaserve.engine.tensor_file import TensorDict

log = logging.getLogger(__name__)

# int8 / int4: weight-only (bf16 or float32 activations); w8a8: int8 weights and per-row int8 activations
QuantMode = Literal["none", "int8", "int4", "w8a8"]
QUANT_MODES = ("none", "int8", "int4", "w8a8")
HeadQuant = Literal["auto", "none", "int8", "int4"]
INT4_GROUP_SIZES = (32, 64, 128, 256)  # what the CPU kernel accepts
INT4_N_MULTIPLE = 16  # the int4 packing needs out_features % 16 == 0
# Calls with more rows than this go to the dense dequantized copy: the quantized kernels win at 1 row
# (decode) and lose from about 8 rows on (measured on a 2-core AVX-512 machine, 1.5B model shapes), so
# speculative verify spans (1 + 8 drafts) and prefill chunks run dense.
MAX_QUANT_ROWS = 4
QUANT_CHUNK_ROWS = 8192  # rows quantized at once (a float32 copy of 8,192 x 1,536 is 50 MB)
# Rows per int8 GEMM of a longer call (prefill): the float32 result of a chunk stays in cache and is all the
# scratch a call holds (the 1.5B model's gate/up at 2,048 rows: 18 MB, not 147 MB), and it runs 1.2-1.5x
# faster than one GEMM over all rows (1 thread, 2-core AVX-512 EPYC).
ROW_CHUNK = 256
# A dynamic linear with more output rows than PACK_SPLIT_ROWS and at least PACK_SPLIT_MIN_INPUTS inputs is
# packed in equal parts of at most PACK_PART_ROWS rows: fbgemm packs up to ~6k rows at ~3 ns a weight and from
# ~8k rows at 4.5-5 (the 1.5B model's 17,920-row gate/up and its 152k-row head; ~1.5 s of a start's CPU), and
# those parts decode as fast as one packing (1 thread, 2-core AVX-512 EPYC). A part is a call of ~11 us more,
# which a narrow weight's part does not earn back: SmolLM2-135M's 576-input head decoded 5-10% slower in
# parts.
PACK_SPLIT_ROWS = 16384
PACK_SPLIT_MIN_INPUTS = 1024
PACK_PART_ROWS = 6144


def fast_bf16(device: torch.device) -> bool:
    """bf16 matmuls run natively here (oneDNN's bf16 path: AVX-512 or AMX on CPU; compute capability 8.0
    and later on CUDA). Without them a bf16 matmul is emulated: 6.6x slower than float32 for 1,024 rows on
    an AVX2-only EPYC; on a V100 or T4 torch emulates it too."""
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
    return device.type != "cpu" or prepack_works(torch.bfloat16, device)


def default_dtype(device: torch.device) -> torch.dtype:
    """dtype "auto": bf16 where its matmuls are native (faster than float32 for decode and prefill: `bench
    engine --ours fp32,bf16`); else float16 on CUDA (native on every CUDA GPU; vLLM's choice there too) and
    float32 on CPUs."""
    if fast_bf16(device):
        return torch.bfloat16
    return torch.float16 if device.type == "cuda" else torch.float32


def preferred_quant(device: torch.device) -> QuantMode:
    """The quantized weights for the bundled 1.5B agent model on this CPU: w8a8 (fbgemm's int8 GEMM)
    wherever fbgemm runs (x86), else int4 (ARM). On an AVX2-only EPYC torch's int4 kernel took 3x
    fbgemm's time for the 1.5B model's layers; on an AVX-512/AMX Xeon fbgemm is at the memory bandwidth and
    faster than the compute-bound int4 kernel (55 vs 63 ms for those layers; 78 vs 81 ms a token end to
    end), and with int4 the model's greedy fix of the demo's bug was wrong where w8a8's and bf16's were
    right. int4 keeps a 4-bit GGUF's own blocks, so it is the closer one for SmolLM2-135M (Q4_1: +0.3%
    perplexity vs bf16 against w8a8's +2.0%) and 15% faster there (fbgemm's fixed cost a call on small
    layers): `--quant int4` (README, "CPU decode")."""
    return "w8a8" if dynamic_int8_works() else "int4"


def resolve_quant(quant: str, device: torch.device, dtype: torch.dtype,
                  dtype_chosen: bool = False) -> QuantMode:
    """'auto' on CPU -> preferred_quant(), except for a float32 asked for (fp32 is the reference mode;
    `dtype_chosen`: the dtype is default_dtype's choice, not the user's); none on CUDA (it would need other
    packings). An explicit int4/int8 off CPU is refused."""
    if quant == "auto":
        reference = dtype == torch.float32 and not dtype_chosen
        return preferred_quant(device) if device.type == "cpu" and not reference else "none"
    if quant not in QUANT_MODES:
        raise EngineError(f"unknown quant {quant!r}; choose auto, {', '.join(QUANT_MODES)}")
    if quant != "none" and device.type != "cpu":
        raise EngineError(f"quant={quant} runs torch's CPU kernels; use quant=none on {device.type}")
    if quant == "w8a8" and not dynamic_int8_works():
        raise EngineError("quant=w8a8 runs fbgemm's int8 GEMM, which this torch build or CPU lacks (x86 "
                          "only); use int8 (weight-only) or int4")
    return quant


def head_quant_for(quant: QuantMode, head: HeadQuant, device: torch.device) -> QuantMode:
    """The LM head's precision. "auto": none when the layers are not quantized, else int8 with dynamic
    activations where fbgemm runs (as fast as an int4 head and about as accurate as bf16; `bench accuracy`
    in the README has the figures), else dense."""
    if head == "auto":
        return "int8" if quant != "none" and dynamic_int8_works() else "none"
    if head != "none" and device.type != "cpu":
        raise EngineError(f"quant_lm_head={head} runs torch's CPU kernels; use none on {device.type}")
    return head


def _op_overload(packet):
    """The C++ callable of an op's only overload: calling the packet adds a Python check of every argument
    (torch/_ops.py, because the op takes a TorchScript object), 9 -> 14.5 us a small int8 linear on a 2-core
    EPYC. Falls back to the packet where torch's internals differ."""
    return getattr(getattr(packet, "default", None), "_op", packet)


def packed_weight_calls():
    """A context for calling ops that take fbgemm's packed weights (enter it once around many calls): outside
    it, torch asks every non-tensor argument for __torch_function__, the TorchScript object answers with a
    C++ exception, and raising it costs ~30 us a call (39 -> 9 us for a small int8 linear on a 2-core EPYC;
    ~4 ms of SmolLM2-135M's ~40 ms decode step). Tensor subclasses' __torch_function__ is off inside: the
    model's tensors are plain."""
    disable = getattr(torch._C, "DisableTorchFunctionSubclass", None)
    return disable() if disable is not None else contextlib.nullcontext()


@functools.cache
def dynamic_int8_works() -> bool:
    """fbgemm's int8 GEMM is in this torch build and runs (x86 with AVX2 or better)."""
    if "fbgemm" not in torch.backends.quantized.supported_engines:
        return False
    try:
        packed = pack_dynamic_int8(torch.ones(8, 8, dtype=torch.int8), torch.ones(8))
        dynamic_int8_mm(torch.ones(1, 8), packed, torch.full((8,), 8.0))
    except (RuntimeError, AttributeError):
        return False
    return True


@functools.cache
def weight_levels() -> int:
    """Levels on each side of zero for a dynamic int8 linear's weights: 127 where fbgemm's int8 products
    cannot overflow (VNNI), 63 where they can (AVX2's vpmaddubsw sums two u8 x s8 products into a
    saturating int16: 255 * 127 * 2 > 32767, so full-range operands would be clipped silently; 255 * 63 * 2
    is not). The activations keep all 8 bits: 7-bit activations (torch's own x86 choice) cost SmolLM2-135M
    +6.6% perplexity, where 7-bit weights are finer than the 4-bit GGUF blocks they come from. Found by
    trying the worst case."""
    k = 64
    packed = pack_dynamic_int8(torch.full((16, k), 127, dtype=torch.int8), torch.ones(16))
    got = dynamic_int8_mm(torch.ones(1, k), packed, torch.full((16,), 127.0 * k))
    return 127 if torch.allclose(got, torch.full_like(got, 127.0 * k)) else 63


def dynamic_int8_mm(x: torch.Tensor, packed, row_sums: torch.Tensor,
                    out_dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """x @ W.T in float32 with each row of x quantized to 8 bits on its own range [min, max], so a row's
    result does not depend on the rows beside it (the two paths below use the same levels, up to float
    rounding at a level's midpoint); `row_sums` is W's
    sum over its inputs (W as packed). One row (a batch-1 decode step): fbgemm's dynamic linear, which
    picks the row's range in C++ (the torch ops below cost ~70 us a call on a 2-core EPYC, as much as the
    GEMM of the 135M model's small layers). More rows (verify spans, decode batches, prefill chunks): the
    same grid (255 steps over the row's range widened to hold 0, 0 on a step) built here for all rows at
    once, so the weights are read once, not once a row (2-16 rows of the 1.5B model's layers: 1.3-2x
    faster than a call per row on that EPYC; the 135M model's from 3 rows), each row mapped onto [0, 1]
    by its grid, one int8 GEMM, mapped back:
    x = lo + span * x01, so x @ W.T = span * (x01 @ W.T) + lo * row_sums. The grid matters: symmetric rows
    cost SmolLM2-135M 4.6% perplexity, a row's plain min-max range 3.3%, this one 1.5% (1,024 tokens).
    `packed`: one packing or a sequence of them over consecutive output rows (a long head packs faster in
    parts: engine/packing.py). Calls of more than ROW_CHUNK rows (prefill) run a chunk at a time into one
    `out_dtype` result."""
    parts = packed if isinstance(packed, list | tuple) else (packed,)
    rows = x.shape[0]
    if rows == 1:
        x = x.float()
        y = [_linear_dynamic()(x, p, False) for p in parts]
        return (y[0] if len(y) == 1 else torch.cat(y, 1)).to(out_dtype)
    if rows <= ROW_CHUNK:
        return _grid_mm(x, parts, row_sums).to(out_dtype)
    out = torch.empty(rows, row_sums.shape[0], dtype=out_dtype)
    for i in range(0, rows, ROW_CHUNK):
        out[i:i + ROW_CHUNK] = _grid_mm(x[i:i + ROW_CHUNK], parts, row_sums)
    return out


def _grid_mm(x: torch.Tensor, parts, row_sums: torch.Tensor) -> torch.Tensor:
    """dynamic_int8_mm's many-row path, float32 out; x in any float dtype (the arithmetic is float32)."""
    # two reductions, not aminmax: over the last dim it took 5-10x their time (256 rows of 576 / 8,960: 121 /
    # 1,745 us against 17 / 336; 2-core Xeon, torch 2.13)
    lo, hi = x.amin(-1, keepdim=True).float(), x.amax(-1, keepdim=True).float()
    step = ((hi.clamp_(min=0) - lo.clamp_(max=0)) / 255).clamp_(min=torch.finfo(torch.float32).tiny)
    lo = (lo / step).round_().mul_(step)  # zero on the grid, as fbgemm's own choice of range puts it
    span = 255 * step
    x01 = torch.sub(x, lo).div_(span)  # one float32 copy of x
    y = [_linear_q_dq()(x01, 1.0 / 255, 0, p) for p in parts]
    y = y[0] if len(y) == 1 else torch.cat(y, 1)
    return y.mul_(span).addmm_(lo, row_sums[None, :])


@functools.cache
def _linear_dynamic():
    return _op_overload(torch.ops.quantized.linear_dynamic)


@functools.cache
def _linear_q_dq():
    return _op_overload(torch.ops.quantized.linear_with_input_q_dq_qweight_dq_output_fp32)


def pack_dynamic_int8(q: torch.Tensor, scales: torch.Tensor):
    """fbgemm's packed form of per-channel int8 weights q * scales (the bias is added after the row
    scales, so it is not packed)."""
    return prepack_int8(int8_view_for_packing(q.contiguous(), scales))


def pack_part_rows(n: int, k: int) -> int:
    """Rows per fbgemm packing of an [n, k] weight: all n, or equal parts of at most PACK_PART_ROWS."""
    if n <= PACK_SPLIT_ROWS or k < PACK_SPLIT_MIN_INPUTS:
        return n
    return -(-n // -(-n // PACK_PART_ROWS))


def int8_view_for_packing(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """A per-channel quantized int8 tensor over the memory of q [n, k] (contiguous), as fbgemm's packing takes
    it: no copy, so a weight is packed from its view of the weight cache file."""
    n, k = q.shape
    with warnings.catch_warnings():  # quantized tensors are deprecated; dynamic_int8_works() gates their use
        warnings.simplefilter("ignore", UserWarning)
        qw = torch._empty_per_channel_affine_quantized((0,), scales=scales.double(), axis=0,
                                                       zero_points=torch.zeros(n, dtype=torch.long),
                                                       dtype=torch.qint8)
    return qw.set_(q.untyped_storage(), q.storage_offset(), (n, k), (k, 1))


def pack_int8_rows(parts, start: int, q: torch.Tensor, scales: torch.Tensor):
    """fbgemm's packing of q, rows [start, start + len(q)) of parts' "q" where they lie (a view of the weight
    cache file); then those rows are let go (their pages leave the process). Reading them into fresh memory
    first cost the 1.5B model's start ~0.6 s of CPU (the copy and its page faults)."""
    packed = prepack_int8(int8_view_for_packing(q, scales))
    parts.release_rows("q", start, q.shape[0])
    return packed


def prepack_int8(qw: torch.Tensor):
    engine = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"  # the packing follows the global engine; the call does not
    try:
        return torch.ops.quantized.linear_prepack(qw, None)
    finally:
        torch.backends.quantized.engine = engine


def quantize_int4(w: torch.Tensor, group_size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q [N, K] int32 in 0..15, scales [N, K/g], zeros [N, K/g]) in float32, w ~ (q - 8) * scale + zero."""
    n, k = w.shape
    groups = w.float().reshape(n, k // group_size, group_size)
    lo, hi = groups.amin(-1, keepdim=True), groups.amax(-1, keepdim=True)
    scales = (hi - lo).clamp(min=1e-6) / 15
    q = ((groups - lo) / scales).round_().clamp_(0, 15).to(torch.int32).reshape(n, k)
    zeros = lo + 8 * scales
    return q, scales.reshape(n, -1), zeros.reshape(n, -1)


def dequantize_int4(q: torch.Tensor, scales: torch.Tensor, zeros: torch.Tensor) -> torch.Tensor:
    n, k = q.shape
    g = k // scales.shape[1]
    groups = (q.float().reshape(n, -1, g) - 8) * scales.float()[..., None] + zeros.float()[..., None]
    return groups.reshape(n, k)


def quantize_int8(w: torch.Tensor, levels: int = 127) -> tuple[torch.Tensor, torch.Tensor]:
    """(q [N, K] int8 in -levels..levels, scales [N]) in float32, w ~ q * scale."""
    w = w.float()
    scales = w.abs().amax(1).clamp(min=1e-8) / levels
    return (w / scales[:, None]).round_().clamp_(-levels - 1, levels).to(torch.int8), scales


def int4_group_for(n: int, k: int, group_size: int) -> int | None:
    """The largest accepted group size <= group_size that divides k, or None if int4 cannot take it."""
    if n % INT4_N_MULTIPLE:
        return None
    fits = [g for g in INT4_GROUP_SIZES if g <= group_size and k % g == 0]
    return max(fits) if fits else None


def quantize_parts(weight: torch.Tensor, bias: torch.Tensor | None, mode: QuantMode, dtype: torch.dtype,
                   group_size: int = 32, dynamic: bool = False) -> dict[str, torch.Tensor]:
    """What a quantized linear stores, computed from its full-precision weight (the weight cache writes
    these; packing for the kernels happens at load, from them):
    int4: q [N, K] uint8 in 0..15, scales [K/g, N, 2] (a group's scale and zero side by side, the layout the
    kernel reads) in `dtype`; int8: q [N, K] int8, scales [N] float32, and for a `dynamic` one row_sums [N]
    float32 (W's sum over its inputs: W as packed). `bias` in `dtype`, where there is one."""
    n, k = weight.shape
    rows = weight.split(QUANT_CHUNK_ROWS)  # every row is quantized on its own: chunks bound the float copies
    if mode == "int4":
        group = int4_group_for(n, k, group_size)
        if group is None:
            raise EngineError(f"int4 needs out_features % {INT4_N_MULTIPLE} == 0 and in_features % 32 "
                              f"== 0; got [{n}, {k}]")
        chunks = [quantize_int4(w, group) for w in rows]
        q, scales, zeros = (torch.cat(c) for c in zip(*chunks, strict=True))
        parts = {"q": q.to(torch.uint8), "scales": torch.stack([scales, zeros], -1).transpose(0, 1)
                 .contiguous().to(dtype)}
    elif mode == "int8":
        chunks = [quantize_int8(w, weight_levels() if dynamic else 127) for w in rows]
        q, scales = (torch.cat(c) for c in zip(*chunks, strict=True))
        parts = {"q": q, "scales": scales}
        if dynamic:
            parts["row_sums"] = torch.cat([c.float().sum(1) for c in q.split(QUANT_CHUNK_ROWS)]) * scales
    else:
        raise EngineError(f"QuantizedLinear takes int4 or int8, not {mode!r}")
    if bias is not None:
        parts["bias"] = bias.to(dtype)
    return parts


class QuantizedLinear:
    """y = x @ W.T + bias with W stored int4 or int8; more than max_rows rows go to `dense`, a DenseLinear
    of the same dequantized W (None: always the quantized kernel). A `dynamic` int8 linear holds fbgemm's
    packing instead of the weight-only kernel's and quantizes each row of its input alone
    (dynamic_int8_mm), so a batch does not change a request's result beyond float rounding; it keeps no
    dense copy: fbgemm's GEMM is as fast as oneDNN's prepacked bf16 from 2 to 2,048 rows of the 1.5B
    model's layers on a 2-core AVX-512 EPYC, and a copy would double the weights' memory.
    `QuantizedLinear(weight, ...)` quantizes a full-precision weight; `from_parts` builds one from
    quantize_parts' tensors (read from the weight cache)."""

    __slots__ = ("mode", "packed", "scales", "group_size", "bias", "dense", "max_rows", "dynamic",
                 "weight_bytes", "row_sums")

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, mode: QuantMode, dtype: torch.dtype,
                 group_size: int = 32, keep_dense: bool = True, prepack: bool = False,
                 max_rows: int = MAX_QUANT_ROWS, dynamic: bool = False):
        dynamic = dynamic and mode == "int8"
        parts = TensorDict(quantize_parts(weight, bias, mode, dtype, group_size, dynamic))
        self._build(parts, mode, dtype, keep_dense, prepack, max_rows, dynamic)

    @classmethod
    def from_parts(cls, parts, mode: QuantMode, dtype: torch.dtype, keep_dense: bool = True,
                   prepack: bool = False, max_rows: int = MAX_QUANT_ROWS, dynamic: bool = False,
                   packer: Packer | None = None):
        """From quantize_parts' tensors, `parts` a TensorFile-like (view / read by name); fbgemm's packing
        runs on `packer`'s threads where one is given (done when its `with` block ends)."""
        self = cls.__new__(cls)
        self._build(parts, mode, dtype, keep_dense, prepack, max_rows, dynamic, packer)
        return self

    def _build(self, parts, mode: QuantMode, dtype: torch.dtype, keep_dense: bool, prepack: bool,
               max_rows: int, dynamic: bool, packer: Packer | None = None) -> None:
        self.mode, self.max_rows = mode, max_rows
        self.dynamic = dynamic and mode == "int8"
        self.bias = parts.view("bias") if "bias" in parts else None
        self.row_sums = None
        dequantized = None
        if mode == "int4":
            q, self.scales = parts.read("q"), parts.view("scales")
            n, k = q.shape
            self.group_size = k // self.scales.shape[0]
            self.packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.to(torch.int32), 1)
            if keep_dense:
                dequantized = dequantize_int4(q, self.scales[..., 0].t(), self.scales[..., 1].t())
            packed_bytes = self.packed.nbytes
        elif self.dynamic:  # fbgemm packs a copy, read from where the int8 weight lies (pack_int8_rows)
            scales = parts.read("scales")
            n, k = parts.shape("q")
            self.group_size, self.scales = 0, scales.to(dtype)
            packed = []
            step = pack_part_rows(n, k)
            q = parts.view("q")
            for start in range(0, n, step):
                pack = functools.partial(pack_int8_rows, parts, start, q[start:start + step],
                                         scales[start:start + step])
                packed.append(pack() if packer is None else packer.submit(pack))
            del q
            self.packed = tuple(packed) if packer is None else packed
            if packer is not None:
                packer.defer(self)
            self.row_sums = parts.read("row_sums")
            packed_bytes = n * k  # fbgemm's packing hides its size
        elif mode == "int8":  # the kernel reads the stored int8 weight as it is (a view of the cache file)
            self.packed, self.group_size = parts.view("q"), 0
            self.scales = parts.view("scales").to(dtype)
            if keep_dense:
                dequantized = self.packed.float() * self.scales.float()[:, None]
            packed_bytes = self.packed.nbytes
        else:
            raise EngineError(f"QuantizedLinear takes int4 or int8, not {mode!r}")
        self.weight_bytes = packed_bytes + self.scales.nbytes
        self.dense = None if dequantized is None else DenseLinear(dequantized.to(dtype), self.bias, prepack)

    def _kernel(self, x: torch.Tensor) -> torch.Tensor:
        if self.dynamic:
            return dynamic_int8_mm(x, self.packed, self.row_sums, x.dtype)
        if self.mode == "int4":
            return torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.packed, self.group_size, self.scales)
        return torch.ops.aten._weight_int8pack_mm(x, self.packed, self.scales)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.dynamic and x.shape[0] == 1 and x.dtype == torch.float32 and len(self.packed) == 1:
            y = _linear_dynamic()(x, self.packed[0], False)  # dynamic_int8_mm row path, less ~6 us of Python
        elif self.dense is not None and x.shape[0] > self.max_rows:
            return self.dense(x)
        else:
            y = self._kernel(x)
        return y if self.bias is None else y.add_(self.bias)

    def nbytes(self) -> int:
        """Bytes of the quantized weight (scales included), without the dense copy."""
        b = 0 if self.bias is None else self.bias.nbytes
        return self.weight_bytes + b


def linear_input_dtype(linears, dtype: torch.dtype) -> torch.dtype:
    """The input dtype `linears` share: float32 where every one is a dynamic int8 linear, which takes and
    returns float32 (fbgemm; a bf16 input is cast on the way in and the result on the way out), else the
    model's `dtype` (the int4 kernel is ~40x slower with float32 inputs)."""
    if linears and all(isinstance(lin, QuantizedLinear) and lin.dynamic for lin in linears):
        return torch.float32
    return dtype


def quantize_linear(weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype, quant: QuantMode,
                    group_size: int, dynamic: bool = False) -> tuple[dict, dict[str, torch.Tensor]]:
    """(spec, parts) of the model's linear for one (fused) projection, from its full-precision weight: dense
    in `dtype`, or quantized; an int4 shape the kernel cannot take falls back to int8. w8a8 (or int8 with
    `dynamic`) runs fbgemm where it runs. `spec` ({"mode", "dynamic"}) and `parts` are what the weight cache
    stores; linear_from_parts builds the callable."""
    if quant == "none":
        parts = {"weight": weight.to(dtype).contiguous()}
        if bias is not None:
            parts["bias"] = bias.to(dtype)
        return {"mode": "none", "dynamic": False}, parts
    if quant == "int4" and int4_group_for(*weight.shape, group_size) is None:
        log.debug("int4 cannot take a [%d, %d] weight; int8 instead", *weight.shape)
        quant = "int8"
    dynamic = (dynamic or quant == "w8a8") and dynamic_int8_works()
    mode = "int8" if quant == "w8a8" else quant
    return {"mode": mode, "dynamic": dynamic}, quantize_parts(weight, bias, mode, dtype, group_size, dynamic)


def linear_from_parts(parts, spec: dict, dtype: torch.dtype, device: torch.device, prepack: bool,
                      keep_dense: bool = True, packer: Packer | None = None):
    """The linear quantize_linear described, from its parts (a TensorFile-like: view / read by name)."""
    if spec["mode"] == "none":
        return DenseLinear.from_parts(parts, device, prepack)
    return QuantizedLinear.from_parts(parts, spec["mode"], dtype, keep_dense, prepack,
                                      dynamic=spec["dynamic"], packer=packer)


def make_linear(weight: torch.Tensor, bias: torch.Tensor | None, dtype: torch.dtype, quant: QuantMode,
                group_size: int, prepack: bool, keep_dense: bool = True, dynamic: bool = False):
    """quantize_linear, then linear_from_parts: the linear for a full-precision weight in one call."""
    spec, parts = quantize_linear(weight, bias, dtype, quant, group_size, dynamic)
    return linear_from_parts(TensorDict(parts), spec, dtype, weight.device, prepack, keep_dense)
