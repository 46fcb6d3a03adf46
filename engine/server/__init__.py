"""OpenAI-compatible HTTP server over one Engine (FastAPI + uvicorn).

Endpoints: POST /v1/chat/completions (tool calls too), POST /v1/completions, POST /v1/responses (OpenAI's
Responses API; GET and DELETE /v1/responses/{id} for stored ones), GET /v1/models[/{id}], POST
/tokenize and /detokenize (vLLM's), GET /health, GET /metrics (Prometheus), GET /stats (engine stats as
JSON). Every response carries `usage.prompt_tokens_details.cached_tokens`, prediction accept/reject counts,
and a `metrics` extension object. Errors use OpenAI's envelope {"error": {"message", "type", "param",
"code"}}; a request field the server does not implement is one of them (400), never dropped.

One concept per module:
    app.py        create_app: wires the context, the error handlers, the API key check and the routes
    context.py    ServingContext: the engine, limits, metrics and model names every route serves with
    auth.py       the API key check (--api-key): 401 in OpenAI's shape
    template.py   the chat template: --chat-template's replacement, whether it renders tools
    limits.py     ServerLimits
    errors.py     the one place errors become OpenAI's error shape
    requests.py   reading a body (size-capped) and parsing it into a request model
    prepare.py    off the engine thread: bound, tokenize and check prompts; build SamplingParams
    choices.py    submitting one engine request per choice; usage, metrics and failures read back from them
    streaming.py  per-choice streams merged, the non-streaming run to the end, the SSE event stream
    chunks.py     the SSE chunk formats of chat and text completions
    tool_use.py   ToolPlan: what tools and tool_choice ask of the prompt and the reply; checking the calls
    tool_parser.py  the `<tool_call>` form read from a reply as it streams (content and call deltas)
    tool_grammar.py the grammar a reply that must be calls is decoded under (tool_choice required / named)
    chat_reply.py ChatReply: one choice's reply as deltas or as one message
    responses_protocol.py  the Responses API's request (input items, flat tools) read as a chat request
    responses_output.py    the response object; OutputItems: a reply's deltas as message / function_call items
    responses_events.py    the Responses API's streamed events
    response_store.py      stored responses, for previous_response_id and GET
    routes_openai.py / routes_responses.py / routes_ops.py / tokenize.py   the endpoints
    metrics.py    Prometheus metrics
    listen.py     bind_socket: the listening socket, bound before the model loads
    thread.py     run_server, ServerThread
"""

from deltaserve.engine.lazy_names import lazy_getattr

# The names load on first use (PEP 562), as the engine package's do: `deltaserve serve --help` reads
# ServerLimits' defaults without importing FastAPI, uvicorn or torch.
_EXPORTS = {
    "ServerLimits": "limits",
    "ServerThread": "thread",
    "bind_socket": "listen",
    "create_app": "app",
    "run_server": "thread",
    "use_chat_template": "template",
}
__all__ = list(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
