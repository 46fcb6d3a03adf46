"""--quant / --quant-lm-head / --deterministic / --compile-decode: how the engine computes, shared by the
commands that run an engine (serve, fix, eval decode-cost and agent)."""

from __future__ import annotations

import argparse
from typing import get_args

from deltaserve.cli import default
from deltaserve.engine import EngineConfig

QUANT_CHOICES = get_args(EngineConfig.model_fields["quant"].annotation)
HEAD_CHOICES = get_args(EngineConfig.model_fields["quant_lm_head"].annotation)
COMPILE_CHOICES = get_args(EngineConfig.model_fields["compile_decode"].annotation)


def add_quant_options(group, compile_default: str = default(EngineConfig, "compile_decode")) -> None:
    """compile_default: what --compile-decode is when not given (the caller sets it; shown in --help)."""
    group.add_argument("--quant", choices=QUANT_CHOICES, default=None,
                       help="quantized linear layers on CPU: int4 (groups of 32) or int8 (per channel) "
                            "weights with float activations, w8a8 (int8 weights and per-row int8 "
                            "activations, fbgemm's GEMM, x86) or none; auto = w8a8 where fbgemm runs (x86: "
                            "faster and closer to bf16 than int4 for the 1.5B model), int4 elsewhere; none "
                            "on CUDA and for --dtype float32 (int4 keeps a 4-bit GGUF's own blocks: the "
                            "closer one for SmolLM2); the KV cache keeps its dtype "
                            f"(default: {default(EngineConfig, 'quant')})")
    group.add_argument("--quant-lm-head", choices=HEAD_CHOICES, default=None,
                       help="the LM head's precision: auto = int8 with 8-bit activations (fbgemm) when the "
                            "layers are quantized (as fast as int4 here, nearly as accurate as bf16), none "
                            f"otherwise (default: {default(EngineConfig, 'quant_lm_head')})")


    group.add_argument("--deterministic", action="store_true", default=None,
                       help="same input, same output: greedy text independent of batching and of the prefix "
                            "cache (float32, no quantization, fixed summation orders; slower: bench engine "
                            "--ours deterministic)")
    group.add_argument("--compile-decode", nargs="?", const="on", choices=COMPILE_CHOICES, default=None,
                       help="batch-1 decode steps through torch.compile on CPU, the small ops between the "
                            "matmuls fused (SmolLM2-135M: ~15%% less time per token): on = the first decode "
                            "step compiles (tens of seconds on 2 cores; a few once inductor's cache holds "
                            "it); auto = a background thread compiles in the engine's idle time while "
                            "decoding goes on eagerly, and the compiled step is kept only if it is faster "
                            "when timed against eager steps; "
                            "nothing off CPU (bench engine --ours default,compiled; given alone: on; "
                            f"default: {compile_default})")


def quant_kwargs(args: argparse.Namespace) -> dict:
    """The numerics options given, so that EngineConfig's defaults decide the rest."""
    given = {"quant": args.quant, "quant_lm_head": args.quant_lm_head, "deterministic": args.deterministic,
             "compile_decode": args.compile_decode}
    return {k: v for k, v in given.items() if v is not None}
