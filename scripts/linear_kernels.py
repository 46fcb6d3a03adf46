"""The quantized linears' kernels side by side on a model's layer shapes, batch 1 (issue 14's trial).

Each kernel runs the projections of `--layers` layers of distinct random weights (so that, as in a real
decode step, the weights come from memory rather than cache) through engine/quant.py's own linears, and
prints ms per token for all of them. A kernel whose time halves with a second thread is compute-bound;
one that does not is at the memory bandwidth.

    python scripts/linear_kernels.py --shapes qwen2.5-coder-1.5b --threads 2

Measured 2026-12-04 (2-core Intel Xeon, AVX-512 + VNNI + AMX, torch 2.13; 28 layers of the 1.5B model):
2 threads: int4 g32 63.1, int4 g128 55.5, w8a8 54.9, int8 weight-only 85.4 ms; 1 thread: 106.3, 99.0,
107.3, 162.4 ms (docs/benchmarks.md, "CPU decode").
"""

from __future__ import annotations

import argparse
import time

import torch

from deltaserve.engine import quant

# (out_features, in_features) of one layer's fused projections: qkv, o, gate_up, down
SHAPES = {
    "qwen2.5-coder-1.5b": [(2048, 1536), (1536, 1536), (17920, 1536), (1536, 8960)],
    "smollm2-135m": [(960, 576), (576, 576), (3072, 576), (576, 1536)],
}
LAYERS = {"qwen2.5-coder-1.5b": 28, "smollm2-135m": 30}


def kernels(weight: torch.Tensor) -> dict:
    """One linear per kernel for this weight, no dense copies."""
    bf16 = torch.bfloat16
    return {
        "int4 g32 (bf16 act.)": quant.QuantizedLinear(weight, None, "int4", bf16, 32, keep_dense=False),
        "int4 g128 (bf16 act.)": quant.QuantizedLinear(weight, None, "int4", bf16, 128, keep_dense=False),
        "w8a8 (fbgemm, fp32 act.)": quant.make_linear(weight, None, torch.float32, "w8a8", 32, False,
                                                       keep_dense=False),
        "int8 weight-only (bf16 act.)": quant.QuantizedLinear(weight, None, "int8", bf16, keep_dense=False),
    }


def ms_per_token(linears: list, inputs: list[torch.Tensor], repeats: int) -> float:
    with quant.packed_weight_calls():
        for lin, x in zip(linears, inputs, strict=True):  # warm-up
            lin(x)
        start = time.perf_counter()
        for _ in range(repeats):
            for lin, x in zip(linears, inputs, strict=True):
                lin(x)
    return (time.perf_counter() - start) / repeats * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", choices=sorted(SHAPES), default="qwen2.5-coder-1.5b")
    parser.add_argument("--layers", type=int, help="layers of distinct weights (default: the model's)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shapes = SHAPES[args.shapes] * (args.layers or LAYERS[args.shapes])
    by_kernel: dict[str, list] = {}
    for n, k in shapes:
        for name, lin in kernels(torch.randn(n, k) * 0.02).items():
            by_kernel.setdefault(name, []).append(lin)
    for name, linears in by_kernel.items():
        dtype = torch.float32 if "fp32" in name else torch.bfloat16
        inputs = [torch.randn(1, k, dtype=dtype) for _, k in shapes]
        print(f"{name:30s} {ms_per_token(linears, inputs, args.repeats):7.1f} ms/token", flush=True)


if __name__ == "__main__":
    main()
