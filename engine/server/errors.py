"""The one place errors become the APIs' error shapes: OpenAI's {"error": {"message", "type", "param",
"code"}}, and Anthropic's {"type": "error", "error": {"type", "message"}} for the Messages API's routes
(/v1/messages and below).

Routes raise: an APIError for a refusal they word themselves, or the engine's own DeltaserveError kinds
(overloaded, invalid request, failed step). The handlers installed here turn those, request validation
errors, HTTP errors (unknown route, wrong method) and unexpected exceptions into the envelope with its
status, and count each in /metrics. A stream that already started ends with an event made of the same envelope
(streaming.py).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from deltaserve.engine.server.context import serving_context
from deltaserve.engine.server.metrics import ServerMetrics
from deltaserve.engine.server.openai_protocol import ErrorBody, ErrorResponse
from deltaserve.errors import (
    APIError,
    ContextLengthError,
    DeltaserveError,
    EngineOverloadedError,
    EngineStepError,
)

log = logging.getLogger("deltaserve.server")


def error_body(exc: APIError) -> dict:
    body = ErrorBody(message=exc.message, type=exc.type, param=exc.param, code=exc.code)
    return ErrorResponse(error=body).model_dump()


# Anthropic's error types by status (its SDKs raise their exception classes by status alone)
ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                         404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                         503: "overloaded_error"}


class AnthropicErrorBody(BaseModel):
    type: str
    message: str


class AnthropicErrorResponse(BaseModel):
    type: Literal["error"] = "error"
    error: AnthropicErrorBody


def anthropic_error_body(exc: APIError) -> dict:
    otherwise = "api_error" if exc.status >= 500 else "invalid_request_error"
    kind = ANTHROPIC_ERROR_TYPES.get(exc.status, otherwise)
    message = exc.anthropic_message or exc.message
    return AnthropicErrorResponse(error=AnthropicErrorBody(type=kind, message=message)).model_dump()


def speaks_anthropic(scope: dict | None) -> bool:
    """Whether a request's errors go in Anthropic's shape: one for the Messages API, or from Anthropic's SDK
    (its `anthropic-version` header, on /v1/models too)."""
    if not scope:
        return False
    path = scope.get("path", "")
    return (path == "/v1/messages" or path.startswith("/v1/messages/")
            or any(name == b"anthropic-version" for name, _ in scope.get("headers", ())))


_TYPE_NAMES = frozenset({"str", "int", "float", "bool", "none", "list", "dict"})


def _is_type_tag(segment: Any) -> bool:
    """Whether a location segment names a union member ('str', 'list[int]', 'constrained-str', 'TextPart')
    rather than a field: request fields are snake_case, pydantic names a member by its type."""
    return isinstance(segment, str) and (segment in _TYPE_NAMES or segment[:1].isupper()
                                         or any(c in segment for c in "[-"))


def _loc(error: Any) -> tuple:
    loc = tuple(error.get("loc", ()))
    return loc[1:] if loc[:1] == ("body",) else loc  # FastAPI's locations start at the part of the request


def validation_error(exc: ValidationError | RequestValidationError) -> APIError:
    """A 400 naming the first field that failed validation (its dotted path is the `param`); a value that
    fits none of a field's accepted types lists why each one refused it. A field the request models do not
    have is named first, as `unsupported_parameter`."""
    errors = [(_loc(e), e.get("msg", "invalid request")) for e in exc.errors()]
    unknown = next((e for e in exc.errors() if e.get("type") == "extra_forbidden"), None)
    if unknown is not None:  # a field we do not implement: named, never dropped
        param = ".".join(str(seg) for seg in _loc(unknown) if not _is_type_tag(seg))
        return APIError(400, f"{param}: unrecognized request field; this server does not support it",
                        param=param, code="unsupported_parameter")
    loc, message = errors[0]
    tag = next((i for i, seg in enumerate(loc) if _is_type_tag(seg)), len(loc))
    while tag < len(loc) and len({other[tag] for other, _ in errors if other[:tag] == loc[:tag]}) == 1:
        # one member was tried (a discriminated union): its fields are the request's, the tag is no field
        errors = [(other[:tag] + other[tag + 1:], msg) for other, msg in errors if other[:tag] == loc[:tag]]
        loc = errors[0][0]
        tag = next((i for i, seg in enumerate(loc) if i >= tag and _is_type_tag(seg)), len(loc))
    param = ".".join(str(seg) for seg in loc[:tag]) or None
    if tag < len(loc):  # a union: every member's reason, at most four
        reasons = dict.fromkeys(".".join(str(seg) for seg in other[tag:]) + f": {msg}"
                                for other, msg in errors if other[:tag] == loc[:tag])
        message = "matches none of the accepted types (" + "; ".join(list(reasons)[:4]) + ")"
    return APIError(400, f"{param}: {message}" if param else message, param=param, code="invalid_value")


def unexpected_error(exc: BaseException) -> APIError:
    return APIError(500, f"internal server error: {type(exc).__name__}: {exc}", type="server_error")


def to_api_error(exc: DeltaserveError) -> APIError:
    """The HTTP answer to a project error: overloaded 503, bad request 400, failed engine step 500."""
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, EngineOverloadedError):
        return APIError(503, exc.message, type="service_unavailable_error", code="queue_full")
    if isinstance(exc, EngineStepError):
        return APIError(500, exc.message, type="server_error", code="engine_error")
    if isinstance(exc, ContextLengthError):  # OpenAI's code for it: clients compact their history on it
        return APIError(400, exc.message, code="context_length_exceeded",
                        anthropic_message=exc.anthropic_message)
    if isinstance(exc, ValueError):  # the bad-input kinds: InvalidRequestError, ModelNotFoundError, ...
        return APIError(400, exc.message, code="invalid_request")
    log.error("unexpected %s: %s", type(exc).__name__, exc.message)
    return unexpected_error(exc)


def engine_failure(out: Any) -> APIError | None:
    """The error of a request the engine finished with finish_reason "error", else None."""
    if out is not None and out.finished and out.finish_reason == "error":
        return APIError(500, f"request failed in the engine: {out.error or 'unknown error'}",
                        type="server_error", code="engine_error")
    return None


def error_response(exc: APIError, metrics: ServerMetrics, scope: dict | None = None) -> JSONResponse:
    """The error answered to the request of ASGI `scope`, in the shape of the API it speaks."""
    metrics.observe_error(exc.status)
    body = anthropic_error_body(exc) if speaks_anthropic(scope) else error_body(exc)
    return JSONResponse(body, status_code=exc.status)


def _answer(request: Request, exc: APIError) -> JSONResponse:
    return error_response(exc, serving_context(request).metrics, request.scope)


async def _project_error(request: Request, exc: DeltaserveError) -> JSONResponse:
    return _answer(request, to_api_error(exc))


async def _request_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    return _answer(request, validation_error(exc))


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    if exc.status_code == 404:
        error = APIError(404, f"no route {request.method} {request.url.path}", code="not_found")
    else:
        error = APIError(exc.status_code, str(exc.detail), code=str(exc.status_code))
    return _answer(request, error)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error in %s", request.url.path)
    return _answer(request, unexpected_error(exc))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(DeltaserveError, _project_error)
    app.add_exception_handler(RequestValidationError, _request_validation)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
