"""The client: a base URL, headers sent with every request, and a transport that does the I/O.

A transport is any callable taking a Request and returning a Response; tests pass a recording one.
"""

from __future__ import annotations

import json
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator
from urllib.parse import urljoin

from tinyhttp.request import Request

DEFAULT_HEADERS = {"User-Agent": "tinyhttp/1.4", "Accept": "application/json"}
Transport = Callable[[Request], "Response"]


@dataclass
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    request: Request | None = None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        return json.loads(self.body or b"null")

    def raise_for_status(self) -> Response:
        if not self.ok:
            raise HTTPError(self)
        return self


class HTTPError(Exception):
    def __init__(self, response: Response):
        self.response = response
        where = f"{response.request.method} {response.request.full_url()}" if response.request else "request"
        super().__init__(f"{where} failed with status {response.status}")


def urllib_transport(request: Request) -> Response:  # pragma: no cover - real network I/O
    raw = urllib.request.Request(request.full_url(), data=request.body, headers=request.headers,
                                 method=request.method)
    try:
        with urllib.request.urlopen(raw, timeout=request.timeout) as reply:
            return Response(reply.status, dict(reply.headers), reply.read(), request)
    except urllib.error.HTTPError as exc:
        return Response(exc.code, dict(exc.headers), exc.read(), request)


class Client:
    def __init__(self, base_url: str, headers: dict[str, str] | None = None,
                 transport: Transport = urllib_transport, timeout: float = 30.0):
        self.base_url = base_url.rstrip("/") + "/"
        self.headers = DEFAULT_HEADERS if headers is None else headers
        self.transport = transport
        self.timeout = timeout

    def set_header(self, name: str, value: str) -> None:
        """Send `name: value` with every later request of this client."""
        for key in [k for k in self.headers if k.lower() == name.lower()]:
            del self.headers[key]
        self.headers[name] = value

    def set_bearer(self, token: str) -> None:
        self.set_header("Authorization", f"Bearer {token}")

    def build(self, method: str, path: str, headers: dict[str, str] | None = None,
              params: dict[str, Any] | None = None, json_body: Any = None) -> Request:
        merged = self.headers
        merged.update(headers or {})
        request = Request(method, urljoin(self.base_url, path.lstrip("/")), merged, dict(params or {}),
                          timeout=self.timeout)
        return request.with_json(json_body) if json_body is not None else request

    def send(self, request: Request) -> Response:
        response = self.transport(request)
        response.request = request
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> Response:
        return self.send(self.build(method, path, **kwargs))

    def get(self, path: str, **kwargs: Any) -> Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, json_body: Any = None, **kwargs: Any) -> Response:
        return self.request("POST", path, json_body=json_body, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> Response:
        return self.request("DELETE", path, **kwargs)

    def get_json(self, path: str, **kwargs: Any) -> Any:
        return self.get(path, **kwargs).raise_for_status().json()

    def iter_pages(self, path: str, page_size: int = 50, max_pages: int = 1000, **kwargs: Any) -> Iterator[Any]:
        """Items of a page-numbered listing ({"items": [...], "next": bool}), page 1 first."""
        base = self.build("GET", path, params={"per_page": page_size}, **kwargs)
        for number in range(1, max_pages + 1):
            data = self.send(base.with_params(page=number)).raise_for_status().json()
            yield from data["items"]
            if not data.get("next"):
                return
        raise RuntimeError(f"{path}: more than {max_pages} pages")
