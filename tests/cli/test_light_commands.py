"""A command's --help, and a model name it refuses, come without importing torch, transformers or litellm
(seconds each): `deltaserve fix --help` took 10 s, as did refusing `--model smollm2` (cli/fix.py imported
the agent and the local provider at module level). Checked by what the process imported, not by its time."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "transformers", "litellm", "fastapi", "uvicorn")

PROBE = """
import contextlib, io, json, sys
from deltaserve.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code, "heavy": sorted(m for m in HEAVY if m in sys.modules)}))
""".replace("HEAVY", repr(HEAVY))


def imported(*argv: str) -> dict:
    run = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("command", ["fix", "eval", "serve", "demo", "bench"])
def test_help_imports_nothing_heavy(command):
    assert imported(command, "--help") == {"code": 0, "heavy": []}


def test_mcp_help_imports_only_the_mcp_sdk():
    assert imported("mcp", "--help") == {"code": 0, "heavy": ["uvicorn"]}  # the SDK's own transports


def test_an_unknown_model_is_refused_before_the_engine_or_the_agent_is_imported(tmp_path):
    result = imported("serve", "--model", "smollm2", "--port", "0")
    assert result == {"code": 2, "heavy": []}
    # an agent command asks litellm whether it knows the name (so `gpt-4o` works), and nothing else
    result = imported("fix", str(tmp_path), "--task", "x", "--model", "smollm2", "--allow-dirty")
    assert result["code"] == 2 and result["heavy"] == ["litellm"]


@pytest.mark.parametrize("bench", ["engine", "accuracy", "prefix", "spec", "load", "kv-disk", "sandbox",
                                   "replay"])
def test_each_bench_builds_its_own_options_when_named(bench):
    """`bench --help` lists the benches without importing them; each one named gets its full parser."""
    from deltaserve.cli import build_parser

    args = build_parser(["bench"], ["bench", bench]).parse_args(["bench", bench])
    assert args.bench == bench and callable(args.func)
    assert set(vars(args)) - {"command", "bench", "func"}, "no options: the bench's parser was not built"


def test_cache_reads_the_weight_files_headers_without_torch(tmp_path, monkeypatch):
    """`deltaserve cache` took 3 s: it read each converted-weights file's key through TensorFile (torch)."""
    import torch

    from deltaserve.engine.tensor_file import TensorWriter

    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path))
    (tmp_path / "weights").mkdir()
    key = json.dumps({"format": 1, "source": "gguf-sha256:" + "0" * 64})
    path = tmp_path / "weights" / "m-0123456789abcdef.safetensors"
    writer = TensorWriter(path, {"key": key, "linears": "{}"})
    writer.add("w", torch.zeros(4))
    writer.finish()
    (tmp_path / "weights" / "broken-0123456789abcdee.safetensors").write_bytes(b"not safetensors")
    assert imported("cache", "--json") == {"code": 0, "heavy": []}
