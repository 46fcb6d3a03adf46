"""Reading a request body: deep nesting is a 400 (it once hit Python's recursion limit, a 500), and a client
that hangs up mid-upload is counted as a client disconnect (499) with one log line, not a 500 with a
traceback."""

from __future__ import annotations

import json
import logging
import socket
import time

import httpx

TINY = "tiny"
CHAT = "/v1/chat/completions"
GOOD = {"model": TINY, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}
JSON = {"content-type": "application/json"}


def http_errors(client: httpx.Client) -> dict[str, float]:
    """deltaserve:http_errors_total by status code, read from /metrics."""
    counts = {}
    for line in client.get("/metrics").text.splitlines():
        if line.startswith("deltaserve:http_errors_total{"):
            labels, value = line.rsplit(" ", 1)
            counts[labels.split('"')[1]] = float(value)
    return counts


def test_deeply_nested_body_is_a_400(http):
    before = http_errors(http).get("500", 0)
    for body in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000,
                 json.dumps(GOOD)[:-1] + ', "metadata": ' + "[" * 300 + "]" * 300 + "}"):
        r = http.post(CHAT, content=body, headers=JSON)
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["code"] == "invalid_json" and "nest too deeply" in error["message"]
    assert http_errors(http).get("500", 0) == before
    # nesting a little parses: the field is then refused as one this server does not support
    ordinary = json.dumps(GOOD)[:-1] + ', "metadata": ' + "[" * 30 + "]" * 30 + "}"
    error = http.post(CHAT, content=ordinary, headers=JSON).json()["error"]
    assert error["code"] == "unsupported_parameter" and error["param"] == "metadata"


def test_non_standard_json_is_a_400(http):
    for body in ('{"model": "tiny", "messages": [], "temperature": NaN}', '{"a": "\\ud800"}', "", "\xff"):
        r = http.post(CHAT, content=body.encode("utf-8", "surrogateescape"), headers=JSON)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", r.text


def _hang_up_mid_body(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n" + b'{"model": ')


def test_client_hanging_up_during_upload_is_a_499_without_traceback(server, http, caplog):
    """Content-Length 100, 10 bytes sent, then the socket closes."""
    before = http_errors(http)
    uvicorn_log = logging.getLogger("uvicorn")  # uvicorn's loggers do not propagate to the root logger
    uvicorn_log.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO):
            for _ in range(3):
                _hang_up_mid_body(server.url)
            deadline = time.monotonic() + 10
            while http_errors(http).get("499", 0) < before.get("499", 0) + 3 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        uvicorn_log.removeHandler(caplog.handler)
    after = http_errors(http)
    assert after.get("499", 0) == before.get("499", 0) + 3
    assert after.get("500", 0) == before.get("500", 0)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], caplog.text
    assert len([r for r in caplog.records if "disconnected while sending the body" in r.getMessage()]) == 3
    assert http.post(CHAT, json=GOOD).status_code == 200
