"""Running an app: bind_socket (fails fast on a taken port), run_server (in the foreground), ServerThread
(in a background thread).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from fastapi import FastAPI

from deltaserve.engine.server.app import create_app
from deltaserve.engine.server.limits import ServerLimits
from deltaserve.errors import ServerStartError


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), for uvicorn to serve on; port 0 picks a free one. Raises OSError
    (errno 98: the port is taken) before anything slow has started.
    The protocol is named, not left 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on sockets whose
    proto is IPPROTO_TCP, and accepted connections inherit it. Without it a response's second write waited
    for the client's delayed ACK: every request on a kept-alive connection took 40 ms more."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a TIME_WAIT leftover is not "in use"
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def run_server(engine: Any, host: str = "127.0.0.1", port: int = 8000, *,
               served_model_name: str | None = None, limits: ServerLimits | None = None,
               log_level: str = "info", sock: socket.socket | None = None, api_key: str | None = None,
               chat_template: str | None = None) -> None:
    """Serve until interrupted (Ctrl-C / SIGTERM), on `sock` when given (see bind_socket), else on
    host:port. `api_key`, `chat_template`: as create_app's."""
    app = create_app(engine, served_model_name=served_model_name, limits=limits, api_key=api_key,
                     chat_template=chat_template)
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock] if sock is not None else None)


class ServerThread:
    """A real uvicorn server on 127.0.0.1 in a background thread (tests, benchmarks, notebooks).

    with ServerThread(create_app(engine)) as server:
        httpx.get(server.url + "/health")
    """

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", port: int = 0,
                 log_level: str = "warning") -> None:
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
