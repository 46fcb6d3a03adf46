"""An outgoing request: immutable-by-convention; the `with_*` methods return changed copies."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD")


@dataclass
class Request:
    method: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    body: bytes | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        self.method = self.method.upper()
        if self.method not in METHODS:
            raise ValueError(f"unsupported method {self.method!r}")
        scheme = urlsplit(self.url).scheme
        if scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {self.url!r}")

    def header(self, name: str) -> str | None:
        """Case-insensitive header lookup."""
        lowered = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == lowered), None)

    def with_header(self, name: str, value: str) -> Request:
        headers = {k: v for k, v in self.headers.items() if k.lower() != name.lower()}
        headers[name] = value
        return replace(self, headers=headers)

    def with_params(self, **params: Any) -> Request:
        """A copy with query parameters added or replaced (None removes one)."""
        new = replace(self)
        new.params.update(params)
        for key in [k for k, v in new.params.items() if v is None]:
            del new.params[key]
        return new

    def with_json(self, data: Any) -> Request:
        body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
        return replace(self, body=body).with_header("Content-Type", "application/json")

    def full_url(self) -> str:
        """The URL with `params` merged into any query it already has (lists repeat the key)."""
        parts = urlsplit(self.url)
        query = urlencode(self.params, doseq=True)
        if parts.query and query:
            query = f"{parts.query}&{query}"
        return urlunsplit((parts.scheme, parts.netloc, parts.path, query or parts.query, parts.fragment))
