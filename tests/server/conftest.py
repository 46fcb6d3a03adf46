"""A real server on 127.0.0.1 (random free port) over a tiny random-weight model, shared by these tests; a
second one whose chat template renders tools, and replies scripted into a server's engine."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import openai
import pytest

from deltaserve.engine import Engine
from deltaserve.engine.server import ServerThread, create_app

TINY = "tiny"  # the served model name
# A Hermes-style template (the <tool_call> form): the tiny model's own (SmolLM2's) renders no tools.
TOOL_TEMPLATE = (Path(__file__).parent / "hermes_tools.jinja").read_text()


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


@pytest.fixture(scope="session")
def tool_server(tiny_llama):
    """A server whose chat template renders tools."""
    srv = start_server(tiny_llama, {"max_num_seqs": 16}, chat_template=TOOL_TEMPLATE)
    yield srv
    srv.stop()


class Scripted:
    """A server's engine made to write the given replies, one per engine request in order: each is forced
    token by token through the engine's real decode passes (teacher forcing), since a random-weight model
    writes no tool call by itself. Records the prompt each request was given, as text. A forced reply is not
    held to the request's grammar (the engine takes one or the other): these test what the server makes of
    a reply; tests that sample test the grammar."""

    def __init__(self, server: ServerThread, replies: list[str]) -> None:
        self.async_engine = server.app.state.async_engine
        self.tokenizer = self.async_engine.engine.tokenizer
        self.replies, self.prompts = list(replies), []
        # the class's method, never an earlier script's
        self.real = type(self.async_engine).add_request.__get__(self.async_engine)
        self.async_engine.add_request = self.add_request

    async def add_request(self, prompt, params, cache_salt=None):
        self.prompts.append(self.tokenizer.decode(prompt))
        ids = self.tokenizer.encode(self.replies.pop(0), add_special_tokens=False)
        forced = params.model_copy(update={"forced_token_ids": ids, "grammar": None})
        return await self.real(prompt, forced, cache_salt)


@pytest.fixture()
def scripted(tool_server):
    """scripted(*replies): the tool server's next requests get these replies."""
    yield lambda *replies: Scripted(tool_server, list(replies))
    vars(tool_server.app.state.async_engine).pop("add_request", None)  # the class's method shows again


@pytest.fixture()
def tool_client(tool_server):
    return openai.OpenAI(base_url=tool_server.url + "/v1", api_key="EMPTY", max_retries=0, timeout=60)
