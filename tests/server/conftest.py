"""A real server on 127.0.0.1 (random free port) over a tiny random-weight model, shared by these tests."""

from __future__ import annotations

import time

import httpx
import openai
import pytest

from deltaserve.engine import Engine
from deltaserve.engine.server import ServerThread, create_app

TINY = "tiny"  # the served model name


def tiny_engine(path, **kwargs):
    kwargs.setdefault("dtype", "float32")
    kwargs.setdefault("device", "cpu")
    kwargs.setdefault("num_blocks", 1024)  # 16k tokens: plenty here; the default pool is sized from memory
    kwargs.setdefault("draft_token_cost", 0.05)  # pinned: measured, draft lengths would follow the box's load
    return Engine.from_pretrained(str(path), **kwargs)


def start_server(path, engine_kwargs=None, **app_kwargs):
    app = create_app(tiny_engine(path, **(engine_kwargs or {})), served_model_name=TINY, **app_kwargs)
    return ServerThread(app).start()


@pytest.fixture(scope="session")
def server(tiny_llama):
    # speculative: the `prediction` tests need drafts
    srv = start_server(tiny_llama, {"max_num_seqs": 32, "speculative": True})
    yield srv
    srv.stop()


@pytest.fixture()
def http(server):
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


@pytest.fixture()
def openai_client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="EMPTY", max_retries=0, timeout=60)


@pytest.fixture()
def make_server(tiny_llama):
    """Start extra servers with their own engine options / limits; all stopped after the test."""
    servers = []

    def make(engine_kwargs=None, **app_kwargs):
        servers.append(start_server(tiny_llama, engine_kwargs, **app_kwargs))
        return servers[-1]

    yield make
    for srv in servers:
        srv.stop()


def _wait_idle(client: httpx.Client, timeout_s: float = 30.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        stats = client.get("/stats").json()
        if stats["requests_in_flight"] == 0 and stats["num_running"] == 0 and stats["num_waiting"] == 0:
            return stats
        if time.monotonic() > deadline:
            return stats
        time.sleep(0.05)


@pytest.fixture()
def wait_idle():
    """/stats once no request is in flight (aborts are processed between engine steps); gives up after
    30 s."""
    return _wait_idle
