"""The socket a server listens on, bound before anything slow starts (no web framework imported here)."""

from __future__ import annotations

import socket


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
