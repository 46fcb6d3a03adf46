"""OpenAI-compatible HTTP server over one Engine (FastAPI + uvicorn).

Endpoints: POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /health, GET /metrics
(Prometheus), GET /stats (engine stats as JSON). Every response carries
`usage.prompt_tokens_details.cached_tokens`, prediction accept/reject counts, and a `metrics` extension
object. Errors use OpenAI's envelope {"error": {"message", "type", "param", "code"}}.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, Field, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from deltaserve.engine.async_engine import AsyncEngine, EngineOverloadedError, EngineStepError, RequestStream
from deltaserve.engine.errors import InvalidRequestError
from deltaserve.engine.openai_protocol import (
    AssistantMessage,
    ChatChoice,
    ChatChunkChoice,
    ChatCompletionChunk,
    ChatCompletionRequest,
    ChatCompletionResponse,
    CompletionRequest,
    CompletionResponse,
    DeltaMessage,
    ErrorBody,
    ErrorResponse,
    ModelCard,
    ModelList,
    ResponseMetrics,
    SamplingRequest,
    TextChoice,
    Usage,
    now,
    random_id,
    usage_and_metrics,
)
from deltaserve.engine.server_metrics import ServerMetrics
from deltaserve.errors import APIError, ServerStartError

log = logging.getLogger("deltaserve.server")

DISCONNECT_POLL_S = 0.25  # how often a non-streaming request checks whether its client is still there


class ServerLimits(BaseModel):
    """Request limits; each one answers with its own 4xx/503 in OpenAI's error shape."""

    max_prompt_tokens: int | None = Field(default=None, ge=1)  # None: the model's context length
    max_tokens: int = Field(default=4096, ge=1)  # largest max_tokens a request may ask for (and the default cap)
    max_waiting: int = Field(default=256, ge=0)  # requests allowed to wait beyond one running batch
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)


def _error_json(exc: APIError) -> dict:
    return ErrorResponse(error=ErrorBody(message=exc.message, type=exc.type, param=exc.param, code=exc.code)).model_dump()


def _validation_error(exc: ValidationError | RequestValidationError) -> APIError:
    first = exc.errors()[0]
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body",)]
    param = ".".join(loc) or None
    message = first.get("msg", "invalid request")
    return APIError(400, f"{param}: {message}" if param else message, param=param, code="invalid_value")


def create_app(engine: Any, *, served_model_name: str | None = None, limits: ServerLimits | None = None) -> FastAPI:
    """The ASGI app serving `engine`; the engine's worker thread starts now and stops with the app."""
    limits = limits or ServerLimits()
    async_engine = AsyncEngine(engine, max_waiting=limits.max_waiting)
    model_name = served_model_name or str(engine.model_name)
    model_names = {model_name, str(engine.model_name)}
    metrics = ServerMetrics(lambda: async_engine.latest_stats)
    started = now()

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        async_engine.shutdown()

    app = FastAPI(title="deltaserve", lifespan=lifespan)
    app.state.async_engine = async_engine
    app.state.metrics = metrics
    app.state.limits = limits

    def error_response(exc: APIError) -> JSONResponse:
        metrics.observe_error(exc.status)
        return JSONResponse(_error_json(exc), status_code=exc.status)

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _request_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(_validation_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_response(APIError(404, f"no route {request.method} {request.url.path}", code="not_found"))
        return error_response(APIError(exc.status_code, str(exc.detail), code=str(exc.status_code)))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error in %s", request.url.path)
        return error_response(APIError(500, f"internal server error: {type(exc).__name__}: {exc}",
                                       type="server_error"))

    # ------------------------------------------------------------ request parsing

    async def read_json(request: Request) -> dict:
        declared = request.headers.get("content-length")
        too_large = APIError(413, f"request body exceeds this server's limit of {limits.max_body_bytes} bytes",
                             code="request_too_large")
        if declared and declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise too_large
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limits.max_body_bytes:
                raise too_large
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise APIError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from exc
        if not isinstance(data, dict):
            raise APIError(400, "request body must be a JSON object", code="invalid_json")
        return data

    def parse(model: type[SamplingRequest], data: dict) -> Any:
        try:
            req = model.model_validate(data)
        except ValidationError as exc:
            raise _validation_error(exc) from exc
        if req.model not in model_names:
            raise APIError(404, f"model {req.model!r} is not served here; available: {model_name!r}",
                           param="model", code="model_not_found")
        if req.max_tokens is not None and req.max_tokens > limits.max_tokens:
            raise APIError(400, f"max_tokens is {req.max_tokens}; this server allows at most {limits.max_tokens}",
                           param="max_tokens", code="max_tokens_too_large")
        return req

    # ------------------------------------------------------------ engine submission

    def make_prepare(req: SamplingRequest, prompt: Any, seed: int | None):
        """Runs on the engine thread: tokenize, apply limits, build SamplingParams."""

        def prepare(eng: Any) -> tuple[list[int], Any]:
            from deltaserve.engine import SamplingParams

            if isinstance(prompt, list) and prompt and isinstance(prompt[0], dict):
                ids = list(eng.apply_chat_template(prompt))
            elif isinstance(prompt, str):
                ids = list(eng.tokenize(prompt))
            else:
                ids = list(prompt)
            cap = limits.max_prompt_tokens or eng.max_model_len
            if len(ids) > cap:
                raise InvalidRequestError(f"prompt has {len(ids)} tokens; this server accepts at most {cap}")
            room = eng.max_model_len - len(ids)
            if room < 1:
                raise InvalidRequestError(
                    f"prompt has {len(ids)} tokens; the model's context is {eng.max_model_len} tokens")
            if req.max_tokens is not None and req.max_tokens > room:
                raise InvalidRequestError(
                    f"prompt ({len(ids)} tokens) + max_tokens ({req.max_tokens}) exceeds the model's context of "
                    f"{eng.max_model_len} tokens")
            try:
                params = SamplingParams(
                    max_tokens=req.max_tokens or min(limits.max_tokens, room),
                    temperature=req.temperature,
                    top_k=max(req.top_k, 0),
                    top_p=req.top_p,
                    seed=seed,
                    stop=list(req.stop or []),
                    ignore_eos=req.ignore_eos,
                    prediction=req.prediction.text() if req.prediction else None,
                )
            except (ValueError, ValidationError) as exc:
                raise InvalidRequestError(str(exc)) from exc
            return ids, params

        return prepare

    async def submit(req: SamplingRequest, prompts: list[Any]) -> list[tuple[int, RequestStream]]:
        """One engine request per (prompt, n); returns (prompt index, stream) per choice, in choice order."""
        streams: list[tuple[int, RequestStream]] = []
        try:
            for p_index, prompt in enumerate(prompts):
                for i in range(req.n):
                    seed = None if req.seed is None else req.seed + i
                    stream = await async_engine.add_request(make_prepare(req, prompt, seed), req.cache_salt)
                    streams.append((p_index, stream))
        except BaseException as exc:
            for _, stream in streams:
                stream.abort()
            if isinstance(exc, EngineOverloadedError):
                raise APIError(503, str(exc), type="service_unavailable_error", code="queue_full") from exc
            if isinstance(exc, InvalidRequestError | ValueError):
                raise APIError(400, str(exc), code="invalid_request") from exc
            raise
        return streams

    # ------------------------------------------------------------ response assembly

    def response_usage(streams: list[tuple[int, RequestStream]]) -> tuple[Usage, ResponseMetrics]:
        return usage_and_metrics((p, getattr(s.last, "metrics", None)) for p, s in streams)

    def record(streams: list[tuple[int, RequestStream]], t0: float) -> None:
        e2e = time.perf_counter() - t0
        for _, stream in streams:
            out = stream.last
            reason = out.finish_reason if out is not None and out.finished else "abort"
            metrics.observe_request(getattr(out, "metrics", None), reason, e2e)

    def failure(out: Any) -> APIError | None:
        if out is not None and out.finished and out.finish_reason == "error":
            return APIError(500, f"request failed in the engine: {out.error or 'unknown error'}",
                            type="server_error", code="engine_error")
        return None

    async def merged(streams: list[tuple[int, RequestStream]]) -> AsyncIterator[tuple[int, Any]]:
        """(choice index, output) from all choices as they arrive; re-raises a stream's error."""
        if len(streams) == 1:
            async for out in streams[0][1]:
                yield 0, out
            return
        q: asyncio.Queue = asyncio.Queue()

        async def pump(index: int, stream: RequestStream) -> None:
            try:
                async for out in stream:
                    q.put_nowait((index, out, None))
            except Exception as exc:
                q.put_nowait((index, None, exc))
            q.put_nowait((index, None, StopAsyncIteration()))

        tasks = [asyncio.create_task(pump(i, s)) for i, (_, s) in enumerate(streams)]
        try:
            remaining = len(tasks)
            while remaining:
                index, out, exc = await q.get()
                if isinstance(exc, StopAsyncIteration):
                    remaining -= 1
                elif exc is not None:
                    raise exc
                else:
                    yield index, out
        finally:
            for task in tasks:
                task.cancel()

    async def collect(request: Request, streams: list[tuple[int, RequestStream]]) -> list[str]:
        """Run all choices to the end (non-streaming); aborts them if the client goes away."""
        texts = [""] * len(streams)

        async def consume() -> None:
            async for index, out in merged(streams):
                texts[index] += out.new_text or ""

        task = asyncio.create_task(consume())
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=DISCONNECT_POLL_S)
                if not task.done() and await request.is_disconnected():
                    task.cancel()
                    raise APIError(499, "client disconnected", code="client_disconnected")
            task.result()
        finally:
            for _, stream in streams:
                stream.abort()
        return texts

    def stream_failure_event(exc: APIError) -> str:
        metrics.observe_error(exc.status)
        return "data: " + json.dumps(_error_json(exc)) + "\n\n"

    # ------------------------------------------------------------ endpoints

    @app.get("/health")
    async def health() -> Response:
        if not async_engine._thread.is_alive():
            return error_response(APIError(503, "engine worker is not running", type="server_error"))
        return JSONResponse({"status": "ok"})

    @app.get("/v1/models")
    async def models() -> ModelList:
        return ModelList(data=[ModelCard(id=model_name, created=started, max_model_len=engine.max_model_len)])

    @app.get("/stats")
    async def stats() -> JSONResponse:
        s = await async_engine.stats()
        body = _as_dict(s)
        body["requests_in_flight"] = async_engine.num_unfinished
        body["step_failures"] = async_engine.step_failures
        return JSONResponse(body)

    @app.get("/metrics")
    async def prometheus_metrics() -> Response:
        try:
            async_engine.latest_stats = await asyncio.wait_for(async_engine.stats(), timeout=5.0)
        except (TimeoutError, asyncio.TimeoutError, EngineStepError):
            pass  # a slow step: serve the last snapshot
        return Response(metrics.render(), media_type=CONTENT_TYPE_LATEST)

    async def run_to_end(request: Request, streams: list[tuple[int, RequestStream]],
                         t0: float) -> tuple[list[str], Usage, ResponseMetrics]:
        """Non-streaming: every choice's full text and the usage, or the engine's failure as an API error."""
        try:
            texts = await collect(request, streams)
        except EngineStepError as exc:
            raise APIError(500, str(exc), type="server_error", code="engine_error") from exc
        finally:
            record(streams, t0)
        for _, s in streams:
            if (err := failure(s.last)) is not None:
                raise err
        return (texts, *response_usage(streams))

    def event_stream(streams: list[tuple[int, RequestStream]], t0: float, opening: list[str],
                     events_for: Callable[[int, Any], list[str]],
                     usage_event: Callable[[Usage, ResponseMetrics], str] | None) -> StreamingResponse:
        """SSE: `opening`, then `events_for(choice index, output)` as outputs arrive, then `usage_event` (when the
        client asked for usage) and [DONE]. An engine failure ends the stream with an error event; a client that
        leaves aborts every choice (frees their blocks)."""

        async def events() -> AsyncIterator[str]:
            try:
                for event in opening:
                    yield event
                async for index, out in merged(streams):
                    if (err := failure(out)) is not None:
                        yield stream_failure_event(err)
                        break
                    for event in events_for(index, out):
                        yield event
                else:
                    if usage_event is not None:
                        yield usage_event(*response_usage(streams))
                yield "data: [DONE]\n\n"
            except EngineStepError as exc:
                yield stream_failure_event(APIError(500, str(exc), type="server_error", code="engine_error"))
                yield "data: [DONE]\n\n"
            finally:
                for _, s in streams:
                    s.abort()  # no-op for finished requests; frees blocks when the client left early
                record(streams, t0)

        return StreamingResponse(events(), media_type="text/event-stream")

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        t0 = time.perf_counter()
        req: ChatCompletionRequest = parse(ChatCompletionRequest, await read_json(request))
        messages = [m.for_template() for m in req.messages]
        streams = await submit(req, [messages])
        rid, created = random_id("chatcmpl"), now()

        if not req.stream:
            texts, usage, rm = await run_to_end(request, streams, t0)
            choices = [ChatChoice(index=i, message=AssistantMessage(content=texts[i]),
                                  finish_reason=s.last.finish_reason) for i, (_, s) in enumerate(streams)]
            return JSONResponse(ChatCompletionResponse(id=rid, created=created, model=req.model, choices=choices,
                                                       usage=usage, metrics=rm).model_dump())

        def chunk(choices: list[ChatChunkChoice], **extra: Any) -> str:
            c = ChatCompletionChunk(id=rid, created=created, model=req.model, choices=choices, **extra)
            data = c.model_dump(exclude_none=True)
            for choice in data["choices"]:
                choice.setdefault("finish_reason", None)
            if req.include_usage and "usage" not in data:
                data["usage"] = None  # OpenAI sends usage: null on every chunk but the last
            return "data: " + json.dumps(data) + "\n\n"

        def events_for(index: int, out: Any) -> list[str]:
            events = []
            if out.new_text:
                events.append(chunk([ChatChunkChoice(index=index, delta=DeltaMessage(content=out.new_text))]))
            if out.finished:
                events.append(chunk([ChatChunkChoice(index=index, delta=DeltaMessage(),
                                                     finish_reason=out.finish_reason)]))
            return events

        opening = [chunk([ChatChunkChoice(index=i, delta=DeltaMessage(role="assistant", content=""))])
                   for i in range(len(streams))]
        usage_event = (lambda usage, rm: chunk([], usage=usage, metrics=rm)) if req.include_usage else None
        return event_stream(streams, t0, opening, events_for, usage_event)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        t0 = time.perf_counter()
        req: CompletionRequest = parse(CompletionRequest, await read_json(request))
        streams = await submit(req, req.prompts())
        rid, created = random_id("cmpl"), now()

        if not req.stream:
            texts, usage, rm = await run_to_end(request, streams, t0)
            choices = [TextChoice(index=i, text=texts[i], finish_reason=s.last.finish_reason)
                       for i, (_, s) in enumerate(streams)]
            return JSONResponse(CompletionResponse(id=rid, created=created, model=req.model, choices=choices,
                                                   usage=usage, metrics=rm).model_dump())

        def chunk(choices: list[TextChoice], usage: Usage | None = None, rm: ResponseMetrics | None = None) -> str:
            data: dict[str, Any] = {"id": rid, "object": "text_completion", "created": created, "model": req.model,
                                    "choices": [c.model_dump() for c in choices]}
            if usage is not None:
                data["usage"] = usage.model_dump()
                data["metrics"] = rm.model_dump() if rm else None
            elif req.include_usage:
                data["usage"] = None
            return "data: " + json.dumps(data) + "\n\n"

        def events_for(index: int, out: Any) -> list[str]:
            if not (out.new_text or out.finished):
                return []
            reason = out.finish_reason if out.finished else None
            return [chunk([TextChoice(index=index, text=out.new_text or "", finish_reason=reason)])]

        usage_event = (lambda usage, rm: chunk([], usage, rm)) if req.include_usage else None
        return event_stream(streams, t0, [], events_for, usage_event)

    return app


def _as_dict(obj: Any) -> dict:
    if isinstance(obj, BaseModel):
        return obj.model_dump()
    if dataclasses.is_dataclass(obj):
        return dataclasses.asdict(obj)
    if isinstance(obj, dict):
        return dict(obj)
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), for uvicorn to serve on; port 0 picks a free one. Raises OSError
    (errno 98: the port is taken) before anything slow has started."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a TIME_WAIT leftover is not "in use"
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def run_server(engine: Any, host: str = "127.0.0.1", port: int = 8000, *, served_model_name: str | None = None,
               limits: ServerLimits | None = None, log_level: str = "info", sock: socket.socket | None = None) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM), on `sock` when given (see bind_socket), else on host:port."""
    import uvicorn

    app = create_app(engine, served_model_name=served_model_name, limits=limits)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)


class ServerThread:
    """A real uvicorn server on 127.0.0.1 in a background thread (tests, benchmarks, notebooks).

    with ServerThread(create_app(engine)) as server:
        httpx.get(server.url + "/health")
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        import threading

        import uvicorn

        if port == 0:  # a free port chosen by the OS, passed to uvicorn as an already bound socket
            self._socket = bind_socket(host, 0)
            port = self._socket.getsockname()[1]
        else:
            self._socket = None
        self.app = app
        self.url = f"http://{host}:{port}"
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=2)
        self._server = uvicorn.Server(config)
        sockets = [self._socket] if self._socket is not None else None
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": sockets}, daemon=True,
                                        name="deltaserve-uvicorn")

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise ServerStartError(f"server at {self.url} did not start")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
