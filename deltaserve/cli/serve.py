"""`deltaserve serve`: load a model once and serve the OpenAI API on it."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from deltaserve.cli import COMMANDS, default, wrapped
from deltaserve.cli.kv_options import add_kv_cache_options, kv_cache_kwargs
from deltaserve.cli.loading import loading_status
from deltaserve.cli.model_names import engine_model
from deltaserve.cli.quant_options import add_quant_options, quant_kwargs
from deltaserve.engine import EngineConfig
from deltaserve.engine.config import SPECULATIVE_METHODS
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.engine.server.listen import bind_socket
from deltaserve.errors import InvalidRequestError

API_KEY_ENV = "DELTASERVE_API_KEY"
# A server lives long enough for a compiled decode step to pay, and "auto" compiles it in the background and
# keeps it only if it is faster (engine/background_compile.py); fix and eval keep EngineConfig's "off".
SERVE_COMPILE_DECODE = "auto"
EXAMPLES = """examples:
  deltaserve serve                # SmolLM2-135M on http://127.0.0.1:8000/v1
  deltaserve serve --model qwen2.5-coder-1.5b --threads 2
  deltaserve serve --model path/to/Qwen2.5-0.5B-Instruct --served-model-name q
  deltaserve serve --model model.Q4_1.gguf --port 8001 --max-num-seqs 8
  deltaserve serve --chat-template hermes_tools.jinja --api-key s3cret

then, from any OpenAI or Anthropic client:
  curl http://127.0.0.1:8000/v1/chat/completions \\
       -H 'content-type: application/json' \\
       -d '{"model": "smollm2-135m",
            "messages": [{"role": "user", "content": "hi"}]}'
  curl http://127.0.0.1:8000/v1/responses -H 'content-type: application/json' \\
       -d '{"model": "smollm2-135m", "input": "hi"}'
  # Claude Code (a ~12k-token prompt, max_tokens 32000), on a server
  # started with --model qwen2.5-coder-1.5b --max-tokens 32000
  ANTHROPIC_BASE_URL=http://127.0.0.1:8000 ANTHROPIC_API_KEY=EMPTY \\
       ANTHROPIC_MODEL=qwen2.5-coder-1.5b claude
  deltaserve fix path/to/repo --task "..." --model openai/smollm2-135m \\
       --api-base http://127.0.0.1:8000/v1

Every response carries usage.prompt_tokens_details.cached_tokens (prefix-cache
hits) and a `metrics` object."""

DESCRIPTION = ("Serve a model over an OpenAI-compatible HTTP API (/v1/chat/completions with tool calls, "
               "/v1/responses (the Responses API of the OpenAI Agents SDK and Codex), /v1/messages "
               "(Anthropic's Messages API, Claude Code's), /v1/completions, "
               "/v1/models, /tokenize, /detokenize, /health, /metrics, /stats). The model "
               "is loaded once; requests join the running batch and stream tokens as they decode. A request "
               "field the server does not implement is a 400 naming it.")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help=COMMANDS["serve"],
                              description=wrapped(DESCRIPTION),
                              epilog=EXAMPLES)
    p.add_argument("--model", default=default(EngineConfig, "model"), metavar="MODEL",
                   help="a bundled name (smollm2-135m, qwen2.5-coder-1.5b) or local/<name>, a model "
                        "directory, a .gguf file, or a Hugging Face hub id in the local HF cache")
    p.add_argument("--allow-download", action="store_true",
                   help="download a hub id that is not in the local HF cache (never under HF_HUB_OFFLINE=1)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default: %(default)s)")
    p.add_argument("--served-model-name", default=None, metavar="NAME",
                   help="the model id clients send (default: --model)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"],
                   help="log level of uvicorn and of the engine (default: %(default)s)")
    p.add_argument("--api-key", default=os.environ.get(API_KEY_ENV) or None, metavar="KEY",
                   help="require `Authorization: Bearer KEY` on every request but /health (401 otherwise; "
                        f"default: ${API_KEY_ENV}, else none)")
    p.add_argument("--chat-template", default=None, metavar="FILE",
                   help="a Jinja chat template replacing the model's own (e.g. one that renders tools in the "
                        "<tool_call> form, for tool calling on a model whose template has none)")
    eng = p.add_argument_group("engine (defaults: EngineConfig's)")
    eng.add_argument("--dtype", default=None, choices=["auto", "float32", "bfloat16", "float16"],
                     help="weights and KV cache dtype (default: auto, bfloat16 on GPU)")
    eng.add_argument("--device", default=None, help="auto, cpu, cuda, cuda:1, ... (default: auto)")
    add_quant_options(eng, compile_default=SERVE_COMPILE_DECODE)
    eng.add_argument("--threads", type=int, default=None, metavar="N",
                     help="CPU threads for torch (default: torch's; 1 is steadier on a busy machine)")
    eng.add_argument("--num-threads", type=int, dest="threads", help=argparse.SUPPRESS)  # the old spelling
    eng.add_argument("--max-num-seqs", type=int, default=None, metavar="N",
                     help=f"largest running batch (default: {default(EngineConfig, 'max_num_seqs')})")
    eng.add_argument("--max-num-batched-tokens", type=int, default=None, metavar="N",
                     help="tokens per forward pass, the chunked-prefill budget "
                          f"(default: {default(EngineConfig, 'max_num_batched_tokens')})")
    eng.add_argument("--num-blocks", type=int, default=None, metavar="N",
                     help="KV cache blocks in the pool (default: sized from memory)")
    eng.add_argument("--max-model-len", type=int, default=None, metavar="N",
                     help="cap the context length (default: the model's)")
    eng.add_argument("--no-prefix-caching", action="store_true", help="disable prefix caching")
    add_kv_cache_options(eng)
    eng.add_argument("--speculative", choices=SPECULATIVE_METHODS, default=None,
                     help="draft method besides `prediction`: suffix (matches in the request and in recent "
                          "outputs), ngram (prompt lookup) or off "
                          f"(default: {default(EngineConfig, 'speculative')})")
    eng.add_argument("--no-speculative", dest="speculative", action="store_const", const="off",
                     help="the same as --speculative off")
    lim = p.add_argument_group("request limits (each answers with its own 4xx/503)")
    lim.add_argument("--max-prompt-tokens", type=int, default=None, metavar="N",
                     help="longest prompt accepted (default: the context length)")
    lim.add_argument("--max-tokens", type=int, default=default(ServerLimits, "max_tokens"), metavar="N",
                     help="largest max_tokens a request may ask for (default: %(default)s)")
    lim.add_argument("--max-waiting", type=int, default=default(ServerLimits, "max_waiting"), metavar="N",
                     help="requests that may wait beyond one running batch before new ones get 503 "
                          "(default: %(default)s)")
    lim.add_argument("--max-body-bytes", type=int, default=default(ServerLimits, "max_body_bytes"),
                     metavar="N",
                     help="largest request body (default: %(default)s)")
    p.set_defaults(func=run, error_exit=2)


def engine_kwargs(args: argparse.Namespace) -> dict:
    """Only the engine options the user set, so EngineConfig's defaults apply to the rest."""
    kwargs = {
        "dtype": args.dtype,
        "device": args.device,
        "num_threads": args.threads,
        "max_num_seqs": args.max_num_seqs,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "num_blocks": args.num_blocks,
        "max_model_len": args.max_model_len,
        "speculative": args.speculative,
        "allow_download": args.allow_download or None,
    }
    kwargs = {k: v for k, v in kwargs.items() if v is not None}
    if args.no_prefix_caching:
        kwargs["enable_prefix_caching"] = False
    return {"compile_decode": SERVE_COMPILE_DECODE, **kwargs, **kv_cache_kwargs(args), **quant_kwargs(args)}


def run(args: argparse.Namespace) -> int:
    try:
        limits = ServerLimits(max_prompt_tokens=args.max_prompt_tokens, max_tokens=args.max_tokens,
                              max_waiting=args.max_waiting, max_body_bytes=args.max_body_bytes)
    except ValidationError as exc:
        return _fail(_first_problem(exc))
    try:
        chat_template = Path(args.chat_template).read_text() if args.chat_template else None
    except OSError as exc:
        return _fail(f"--chat-template: cannot read {args.chat_template}: {exc.strerror or exc}")
    try:  # before the model loads: a taken port should fail in a second, not after the load
        sock = bind_socket(args.host, args.port)
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}"
                     + ("; pick another with --port" if exc.errno == 98 else ""))
    try:
        model = engine_model(args.model, allow_download=args.allow_download, download_flag=True)
        # torch and FastAPI take seconds: not paid by `serve --help`, a taken port or an unknown model
        from deltaserve.engine import Engine
        from deltaserve.engine.server import run_server, use_chat_template

        with loading_status(model):
            engine = Engine.from_pretrained(model, **engine_kwargs(args))
        if chat_template is not None:
            use_chat_template(engine, chat_template)
    except InvalidRequestError as exc:  # the chat template cannot render a chat
        sock.close()
        return _fail(f"--chat-template: {exc.message}")
    except ValidationError as exc:
        sock.close()
        return _fail(_first_problem(exc))
    except ValueError as exc:  # transformers' GGUF reader refuses a corrupt file with a plain ValueError
        sock.close()
        return _fail(str(exc))
    except BaseException:  # EngineError and the rest: reported by the CLI's one handler
        sock.close()
        raise
    show_engine_logs(args.log_level)
    port = sock.getsockname()[1]  # with --port 0, the one the system gave
    print(f"deltaserve: serving {args.served_model_name or engine.model_name} "
          f"(context {engine.max_model_len}) on http://{args.host}:{port}/v1", file=sys.stderr, flush=True)
    run_server(engine, args.host, args.port, served_model_name=args.served_model_name, limits=limits,
               log_level=args.log_level, sock=sock, api_key=args.api_key)
    return 0


def show_engine_logs(level: str) -> None:
    """The engine's own lines on stderr at --log-level, beside uvicorn's (e.g. whether the compiled decode
    step won its trial); Python's default shows warnings only."""
    logger = logging.getLogger("deltaserve")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:  %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level.upper())


def _first_problem(exc) -> str:
    """`--option-name: message` for a pydantic error on a limit or engine setting."""
    first = exc.errors()[0]
    name = "--" + "-".join(str(p) for p in first.get("loc", ())).replace("_", "-")
    return f"{name}: {first.get('msg', 'invalid value')}"


def _fail(message: str) -> int:
    print(f"deltaserve serve: {message}", file=sys.stderr)
    return 2
