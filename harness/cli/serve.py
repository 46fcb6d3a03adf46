"""`deltaserve serve`: load a model once and serve the OpenAI API on it."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="serve a model over an OpenAI-compatible HTTP API",
                              description="Serve a model over an OpenAI-compatible HTTP API "
                              "(/v1/chat/completions, /v1/completions, /v1/models, /health, /metrics, /stats).")
    p.add_argument("--model", default="smollm2-135m",
                   help="bundled name (smollm2-135m), a local HF checkpoint directory, or a .gguf file")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name", default=None, help="the model id clients send (default: --model)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    eng = p.add_argument_group("engine")
    eng.add_argument("--dtype", default=None, choices=["auto", "float32", "bfloat16", "float16"])
    eng.add_argument("--device", default=None, help="auto, cpu, cuda, cuda:1, ...")
    eng.add_argument("--num-threads", type=int, default=None, help="CPU threads for torch (default: torch's)")
    eng.add_argument("--max-num-seqs", type=int, default=None, help="largest running batch")
    eng.add_argument("--max-num-batched-tokens", type=int, default=None, help="tokens per forward pass")
    eng.add_argument("--num-blocks", type=int, default=None, help="KV cache blocks in the pool")
    eng.add_argument("--max-model-len", type=int, default=None, help="cap the context length")
    eng.add_argument("--no-prefix-caching", action="store_true", help="disable prefix caching")
    eng.add_argument("--speculative", action="store_true", help="enable speculative decoding (n-gram / prediction)")
    lim = p.add_argument_group("request limits")
    lim.add_argument("--max-prompt-tokens", type=int, default=None, help="default: the context length")
    lim.add_argument("--max-tokens", type=int, default=4096, help="largest max_tokens a request may ask for")
    lim.add_argument("--max-waiting", type=int, default=256,
                     help="requests that may wait beyond one running batch before new ones get 503")
    lim.add_argument("--max-body-bytes", type=int, default=8 * 1024 * 1024)
    p.set_defaults(func=run)


def engine_kwargs(args: argparse.Namespace) -> dict:
    """Only the engine options the user set, so EngineConfig's defaults apply to the rest."""
    kwargs = {
        "dtype": args.dtype,
        "device": args.device,
        "num_threads": args.num_threads,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "num_blocks": args.num_blocks,
        "max_model_len": args.max_model_len,
    }
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if args.no_prefix_caching:
        kwargs["enable_prefix_caching"] = False
    if args.speculative:
        kwargs["speculative"] = True
    return kwargs


def run(args: argparse.Namespace) -> int:
    from engine import Engine
    from engine.errors import EngineError
    from engine.server import ServerLimits, run_server

    try:
        limits = ServerLimits(max_prompt_tokens=args.max_prompt_tokens, max_tokens=args.max_tokens,
                              max_waiting=args.max_waiting, max_body_bytes=args.max_body_bytes)
        engine = Engine.from_pretrained(args.model, **engine_kwargs(args))
    except (EngineError, ValueError) as exc:
        print(f"deltaserve serve: {exc}", file=sys.stderr)
        return 2
    print(f"deltaserve: serving {args.served_model_name or engine.model_name} "
          f"(context {engine.max_model_len}) on http://{args.host}:{args.port}/v1", file=sys.stderr, flush=True)
    run_server(engine, args.host, args.port, served_model_name=args.served_model_name, limits=limits,
               log_level=args.log_level)
    return 0
