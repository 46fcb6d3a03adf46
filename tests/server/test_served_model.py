"""A model behind our server: the agent reads its context window from `GET /v1/models` (max_model_len) and
fits its first prompt to it, as for a local model, so a file larger than the window does not make the
request fail (real server on 127.0.0.1, real litellm calls)."""

from __future__ import annotations

import io

from rich.console import Console

from deltaserve.harness import Agent
from deltaserve.harness.served_model import served_context_window

from .conftest import TINY

FUNCTIONS = 150  # a module of ~6,000 tokens: more than the tiny model's 2,048-token window


def test_the_window_is_the_servers_max_model_len(server):
    assert served_context_window(server.url + "/v1", f"openai/{TINY}") == 2048
    assert served_context_window(server.url + "/v1", "openai/not-served") is None
    assert served_context_window("http://127.0.0.1:9/v1", f"openai/{TINY}") is None  # nothing listening


def test_the_first_prompt_fits_the_served_window(server, tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    body = "".join(f"def helper_{i}(value):\n    return value * {i} + {i * 7} - (value // 3)\n\n\n"
                   for i in range(FUNCTIONS))
    (root / "calc.py").write_text(body + "def add(a, b):\n    return a - b\n")
    test = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    (root / "test_calc.py").write_text(test)
    agent = Agent(root, "add() returns the wrong result", model=f"openai/{TINY}", api_base=server.url + "/v1",
                  edit_format="search_replace", max_steps=1, max_tokens=64, history_room=256, localize=False,
                  sandbox="none", test_cmd='python -c "from calc import add; assert add(2, 3) == 5"',
                  console=Console(file=io.StringIO()))
    report = agent.run()
    assert not report.stopped.startswith("model call failed"), report.stopped
    step = report.steps[0]
    assert agent.count((root / "calc.py").read_text()) > 2048  # the whole file alone would not fit
    assert 0 < step.prompt_tokens <= 2048 - 64 - 256  # counted by the server
