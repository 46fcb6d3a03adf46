"""OpenAI-compatible HTTP server over one Engine (FastAPI + uvicorn).

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health, GET /metrics
(Prometheus), GET /stats (engine stats as JSON). Every response carries
`usage.prompt_tokens_details.cached_tokens`, prediction accept/reject counts, and a `metrics` extension
object. Errors use OpenAI's envelope {"error": {"message", "type", "param", "code"}}.

One concept per module:
    app.py        create_app: wires the context, the error handlers and the routes; the app's lifespan
    context.py    ServingContext: the engine, limits, metrics and model names every route serves with
    limits.py     ServerLimits
    errors.py     the one place errors become OpenAI's error shape
    requests.py   reading a body (size-capped) and parsing it into a request model
    prepare.py    off the engine thread: bound, tokenize and check prompts; build SamplingParams
    choices.py    submitting one engine request per choice; usage, metrics and failures read back from them
    streaming.py  per-choice streams merged, the non-streaming run to the end, the SSE event stream
    chunks.py     the SSE chunk formats of chat and text completions
    routes_openai.py / routes_ops.py   the endpoints
    metrics.py    Prometheus metrics
    thread.py     bind_socket, run_server, ServerThread
"""

from deltaserve.engine.server.app import create_app
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.engine.server.thread import ServerThread, bind_socket, run_server

__all__ = ["ServerLimits", "ServerThread", "bind_socket", "create_app", "run_server"]
