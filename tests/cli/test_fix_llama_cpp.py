"""`deltaserve fix` against a third-party OpenAI-compatible server, llama.cpp's (llama-cpp-python's server
extra, `pip install .[bench]`), serving the bundled SmolLM2 GGUF: the step reports' cached_tokens must be
what that server's usage says.

llama-cpp-python's server (checked with 0.3.36) reuses the longest matching prompt prefix (its log says
"N prefix-match hit") but reports no prompt_tokens_details in usage, streamed or not; so the truth to assert
is that every step's cached_tokens is unknown (None, shown as "unknown"), never a made-up 0, while the
prompt and completion counts are the server's. Should a later version report cached tokens, the probe below
sees them and the test asserts the steps carry them instead.
"""

from __future__ import annotations

import importlib.util
import json
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from deltaserve.cli import main
from deltaserve.engine.bundled import BUNDLED

try:
    HAVE_SERVER = importlib.util.find_spec("llama_cpp.server") is not None
    if HAVE_SERVER:
        import llama_cpp.server.app  # noqa: F401  (the extra's deps: fastapi, sse-starlette, ...)
except ImportError:
    HAVE_SERVER = False

pytestmark = pytest.mark.skipif(not HAVE_SERVER, reason="llama-cpp-python's server extra is not installed "
                                "(pip install .[bench])")
STARTUP_S = 180


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    gguf = BUNDLED["smollm2-135m"].locate("smollm2-135m")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
                                 "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192",
                                 "--n_threads", "1"], stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not start:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield base, log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _probe_usage(base: str) -> dict:
    """One request of our own, repeated so the server could hit its prefix: what its usage carries."""
    body = {"messages": [{"role": "user", "content": "Say hello to everyone in this room, please."}],
            "max_tokens": 2, "temperature": 0}
    httpx.post(f"{base}/chat/completions", json=body, timeout=60).raise_for_status()
    return httpx.post(f"{base}/chat/completions", json=body, timeout=60).json()["usage"]


def test_fix_reports_the_servers_cache_figures(llama_server, project, test_cmd, tmp_path, capsys):
    base, log = llama_server
    usage = _probe_usage(base)
    reported = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    trace = tmp_path / "trace.jsonl"
    main(["fix", str(project), "--copy", "--task", "add() returns a - b", "--test-cmd", test_cmd,
          "--model", "openai/smollm2-135m", "--api-base", base, "--max-steps", "2", "--max-tokens", "48",
          "--trace", str(trace)])
    out = capsys.readouterr().out
    steps = [json.loads(line) for line in trace.read_text().splitlines()[1:]]  # after the run header
    model_steps = [s for s in steps if s["completion_tokens"]]
    assert len(model_steps) == 2, out
    for step in model_steps:  # counts from the server's usage, not zeros
        assert step["prompt_tokens"] > 100 and step["completion_tokens"] > 0
    if reported is None:  # llama-cpp-python 0.3.36: the server does not say
        assert all(s["cached_tokens"] is None for s in model_steps)
        assert "unknown" in out
        # yet it did reuse the prefix on step 2: the figure is unknown, not zero
        hits = [int(n) for n in re.findall(r"(\d+) prefix-match hit", log.read_text())]
        assert hits and max(hits) > 100
    else:
        assert all(isinstance(s["cached_tokens"], int) for s in model_steps)
        assert model_steps[1]["cached_tokens"] > 0
