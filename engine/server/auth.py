"""`--api-key`: every request but GET /health must send `Authorization: Bearer <key>` (OpenAI's clients) or
`x-api-key: <key>` (Anthropic's); others get a 401 (`invalid_api_key`, in the shape of the API asked). An
ASGI middleware rather than a route dependency, so that no route (nor an unknown path) answers before the
key is checked, and streaming responses pass through it untouched.
"""

from __future__ import annotations

import hmac
from typing import Any

from deltaserve.engine.server.errors import error_response
from deltaserve.engine.server.metrics import ServerMetrics
from deltaserve.errors import APIError

OPEN_PATHS = frozenset({"/health"})  # probes (load balancers, orchestrators) carry no key


def _key(scope: dict) -> str | None:
    """The key the request sends: a bearer token, or Anthropic's x-api-key header."""
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
        elif name == b"x-api-key":
            return value.decode("latin-1").strip()
    return None


class APIKeyCheck:
    """ASGI middleware refusing requests without the server's key (compared in constant time)."""

    def __init__(self, app: Any, api_key: str, metrics: ServerMetrics) -> None:
        self.app, self.key, self.metrics = app, api_key.encode(), metrics

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            return await self.app(scope, receive, send)
        token = _key(scope)
        if token is not None and hmac.compare_digest(token.encode(), self.key):
            return await self.app(scope, receive, send)
        message = ("missing API key: send the header `Authorization: Bearer <key>` (or `x-api-key: <key>`)"
                   if token is None else "incorrect API key")
        response = error_response(APIError(401, message, code="invalid_api_key"), self.metrics, scope)
        response.headers["www-authenticate"] = "Bearer"
        await response(scope, receive, send)
