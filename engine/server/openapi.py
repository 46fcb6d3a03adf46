"""The published OpenAPI schema (/openapi.json), generated from the request and response models.

The OpenAI routes read their bodies themselves (size-capped, depth-limited JSON, strict models), so FastAPI
sees no body parameter there: each route declares its request model with `request_body(Model)` and the
schema here moves that model's definitions into `components`. Error statuses are declared on the routes with
`error_responses(...)`, in the one ErrorResponse envelope (Anthropic's on the Messages API's routes). The
schema also states this server's own terms, so that a schema-driven client or fuzzer sends what it would
accept: the model name it serves and the largest max_tokens it allows.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from deltaserve.engine.server.auth import OPEN_PATHS
from deltaserve.engine.server.context import ServingContext
from deltaserve.engine.server.openai_protocol import ErrorResponse

REF = "#/components/schemas/{model}"
# A stream of server-sent events each named by its type (event: <type>, data: <the event's JSON>): the
# Responses and Messages APIs' streams.
NAMED_EVENTS = {"text/event-stream": {"schema": {
    "type": "object", "required": ["event", "data"],
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}}}}}
ERROR_STATUSES = {
    400: "Invalid request: a bad value, a field this server does not support, a prompt that does not fit, "
         "or a body that is not a JSON object",
    401: "The API key (Authorization: Bearer) is missing or wrong, on a server started with one",
    404: "The requested model is not served here",
    413: "The request body is larger than this server accepts",
    499: "The client disconnected before the answer (never seen by that client)",
    500: "The engine failed while serving the request, or the model's reply broke the request's tool plan "
         "(no call where one was required, a call to an unknown tool, arguments that break a strict schema)",
    503: "The server is overloaded (too many requests waiting) or its engine is not running",
}


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` for a route that reads a `model` JSON body itself."""
    schema = model.model_json_schema(ref_template=REF)
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def error_responses(*statuses: int,
                    envelope: type[BaseModel] = ErrorResponse) -> dict[int | str, dict[str, Any]]:
    """`responses` entries for these error statuses, each with the error envelope (OpenAI's by default)."""
    return {status: {"model": envelope, "description": ERROR_STATUSES[status]} for status in statuses}


def _hoist_request_schemas(schema: dict) -> None:
    """Each inline request-body schema becomes a component (with its $defs) referenced by name."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for operation in (op for path in schema["paths"].values() for op in path.values()):
        content = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if not content or "title" not in content["schema"]:
            continue
        body = content["schema"]
        components.update(body.pop("$defs", {}))
        components[body["title"]] = body
        content["schema"] = {"$ref": REF.format(model=body["title"])}


def _state_server_terms(schema: dict, ctx: ServingContext) -> None:
    components = schema["components"]["schemas"]
    for name in ("ChatCompletionRequest", "CompletionRequest", "ResponsesRequest", "MessagesRequest",
                 "MessagesInput"):
        properties = components.get(name, {}).get("properties", {})
        if "model" in properties:
            properties["model"]["enum"] = [ctx.model_name]
        for field in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            declared = properties.get(field, {})
            for option in [declared, *declared.get("anyOf", [])]:
                if option.get("type") == "integer":
                    option["maximum"] = ctx.limits.max_tokens


def _require_key(schema: dict) -> None:
    """The bearer scheme, required by (and a 401 on) every operation but the open ones."""
    schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    error = {"$ref": REF.format(model=ErrorResponse.__name__)}
    for path, operations in schema["paths"].items():
        if path in OPEN_PATHS:
            continue
        for op in operations.values():
            op["security"] = [{"bearer": []}]
            op["responses"]["401"] = {"description": ERROR_STATUSES[401],
                                      "content": {"application/json": {"schema": error}}}


def install_openapi(app: FastAPI, ctx: ServingContext, secured: bool = False) -> None:
    """Serve the schema described above as the app's /openapi.json (built once, on the first request);
    `secured`: the server takes an API key."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                 routes=app.routes)
            _hoist_request_schemas(schema)
            _state_server_terms(schema, ctx)
            if secured:
                _require_key(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # FastAPI's documented hook for a customised schema
