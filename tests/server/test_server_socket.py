"""The socket `deltaserve serve` and ServerThread hand uvicorn: connections accepted on it send at once
(TCP_NODELAY). It once had proto 0, so asyncio left Nagle's algorithm on for every connection, and each
request on a kept-alive connection (the openai client's, litellm's, httpx's) waited 40 ms for the client's
delayed ACK before its response's second write went out."""

from __future__ import annotations

import asyncio
import socket

import pytest

from deltaserve.engine.server import bind_socket


async def accepted_nodelay(listening: socket.socket) -> int:
    """TCP_NODELAY of the server side of a connection accepted on `listening`, as uvicorn serves it
    (`loop.create_server(sock=...)`)."""
    loop = asyncio.get_running_loop()
    accepted: asyncio.Future = loop.create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport):
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await loop.create_server(Probe, sock=listening)
    try:
        host, port = listening.getsockname()[:2]
        _, writer = await asyncio.open_connection(host, port)
        value = await asyncio.wait_for(accepted, 10)
        writer.close()
        return value
    finally:
        server.close()
        await server.wait_closed()


def test_connections_on_the_bound_socket_send_without_delay():
    sock = bind_socket("127.0.0.1", 0)
    assert sock.proto == socket.IPPROTO_TCP
    assert asyncio.run(accepted_nodelay(sock)) != 0


def test_a_socket_without_its_protocol_would_keep_nagle_on():
    """The check above can fail: the socket bind_socket made before (proto 0) keeps the delay."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    value = asyncio.run(accepted_nodelay(sock))
    if value != 0:
        pytest.skip("this Python's asyncio sets TCP_NODELAY whatever the socket's proto")
    assert value == 0
