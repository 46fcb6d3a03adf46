"""Running an app: run_server (in the foreground), ServerThread (in a background thread), on a socket from
listen.bind_socket.
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
from deltaserve.engine.server.listen import bind_socket
from deltaserve.errors import ServerStartError


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
