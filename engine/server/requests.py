"""A request body read under the server's size limit and parsed into an OpenAI request model."""

from __future__ import annotations

import json
from typing import TypeVar

from fastapi import Request
from pydantic import ValidationError

from deltaserve.engine.openai_protocol import SamplingRequest
from deltaserve.engine.server.context import ServingContext
from deltaserve.engine.server.errors import validation_error
from deltaserve.errors import APIError

R = TypeVar("R", bound=SamplingRequest)


async def read_json(request: Request, max_body_bytes: int) -> dict:
    """The body as a JSON object; 413 past `max_body_bytes` (declared or streamed), 400 when not JSON."""
    declared = request.headers.get("content-length")
    too_large = APIError(413, f"request body exceeds this server's limit of {max_body_bytes} bytes",
                         code="request_too_large")
    if declared and declared.isdigit() and int(declared) > max_body_bytes:
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > max_body_bytes:
            raise too_large
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise APIError(400, f"request body is not valid JSON: {exc}", code="invalid_json") from exc
    if not isinstance(data, dict):
        raise APIError(400, "request body must be a JSON object", code="invalid_json")
    return data


def parse_request(model: type[R], data: dict, ctx: ServingContext) -> R:
    """`data` as a `model`, for a model this server serves and a max_tokens within its limit."""
    try:
        req = model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc) from exc
    if req.model not in ctx.model_names:
        raise APIError(404, f"model {req.model!r} is not served here; available: {ctx.model_name!r}",
                       param="model", code="model_not_found")
    limit = ctx.limits.max_tokens
    if req.max_tokens is not None and req.max_tokens > limit:
        raise APIError(400, f"max_tokens is {req.max_tokens}; this server allows at most {limit}",
                       param="max_tokens", code="max_tokens_too_large")
    return req


async def read_request(request: Request, model: type[R], ctx: ServingContext) -> R:
    return parse_request(model, await read_json(request, ctx.limits.max_body_bytes), ctx)
