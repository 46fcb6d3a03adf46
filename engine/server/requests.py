"""A request body read under the server's size limit and parsed into an OpenAI request model.

The body is parsed by pydantic's JSON parser, which stops at a fixed nesting depth instead of recursing until
Python's stack runs out, and accepts only standard JSON (no NaN / Infinity). A client that hangs up before
its body has arrived is a 499 (client disconnected) with one log line, not a server error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

import pydantic_core
from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from deltaserve.engine.server.context import ServingContext
from deltaserve.engine.server.errors import validation_error
from deltaserve.engine.server.openai_protocol import SamplingRequest
from deltaserve.errors import APIError

R = TypeVar("R", bound=SamplingRequest)
M = TypeVar("M", bound=BaseModel)

log = logging.getLogger("deltaserve.server")


async def read_body(request: Request, max_body_bytes: int) -> bytes:
    """The raw body; 413 past `max_body_bytes` (declared or streamed), 499 when the client hangs up first."""
    declared = request.headers.get("content-length")
    too_large = APIError(413, f"request body exceeds this server's limit of {max_body_bytes} bytes",
                         code="request_too_large")
    if declared and declared.isdigit() and int(declared) > max_body_bytes:
        raise too_large
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > max_body_bytes:
                raise too_large
    except ClientDisconnect as exc:
        log.info("client disconnected while sending the body of %s %s (%d bytes received)",
                 request.method, request.url.path, len(body))
        raise APIError(499, "client disconnected before the request body arrived",
                       code="client_disconnected") from exc
    return bytes(body)


def parse_json_object(body: bytes) -> dict:
    """`body` as a JSON object; 400 when it is not JSON, nests too deeply, or is not an object."""
    try:
        data = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        reason = str(exc)
        if "recursion limit" in reason:  # the parser's fixed depth limit
            reason = f"arrays/objects nest too deeply ({reason})"
        raise APIError(400, f"request body is not valid JSON: {reason}", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise APIError(400, "request body must be a JSON object", code="invalid_json")
    return data


def validated(model: type[M], data: dict) -> M:
    """`data` as a `model`; a 400 naming the first field that does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc) from exc


def check_model(name: str, ctx: ServingContext) -> None:
    """A 404 (OpenAI's `model_not_found`) for a model this server does not serve."""
    if name not in ctx.model_names:
        raise APIError(404, f"model {name!r} is not served here; available: {ctx.model_name!r}",
                       param="model", code="model_not_found")


def parse_request(model: type[R], data: dict, ctx: ServingContext) -> R:
    """`data` as a `model`, for a model this server serves and a max_tokens within its limit."""
    req = validated(model, data)
    check_model(req.model, ctx)
    check_max_tokens(req.max_tokens, ctx)
    return req


def check_max_tokens(value: int | None, ctx: ServingContext, param: str = "max_tokens") -> None:
    """A 400 for more tokens to generate than this server allows a request."""
    limit = ctx.limits.max_tokens
    if value is not None and value > limit:
        raise APIError(400, f"{param} is {value}; this server allows at most {limit}", param=param,
                       code="max_tokens_too_large")


async def read_json(request: Request, ctx: ServingContext) -> dict:
    """The body as a JSON object, under the server's size limit."""
    return parse_json_object(await read_body(request, ctx.limits.max_body_bytes))


async def read_request(request: Request, model: type[R], ctx: ServingContext) -> R:
    return parse_request(model, await read_json(request, ctx), ctx)


@contextmanager
def params_renamed(names: dict[str, str]) -> Iterator[None]:
    """Re-raise a refusal of the chat request another API's request became as one of that request: the
    param by that API's name (`names`: chat's name -> its), in the message too."""
    try:
        yield
    except APIError as exc:
        param = names.get(exc.param or "")
        if param is None:
            raise
        message = exc.message.replace(f"{exc.param}:", f"{param}:", 1)
        raise APIError(exc.status, message, type=exc.type, param=param, code=exc.code) from exc
