"""Hugging Face hub ids resolved from a local HF cache that the test builds itself (the hub's own layout:
models--org--name/snapshots/<rev>/..., refs/main). No test here may open a network connection."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest
from huggingface_hub import constants

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine.loader import load_model, resolve_source
from deltaserve.errors import ModelNotFoundError

REPO = "tinyorg/tiny-llama"
REVISION = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a test tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture
def hf_cache(tmp_path, monkeypatch, tiny_llama):
    """A HF cache holding REPO (a copy of the tiny llama), pointed at by HF_HUB_CACHE."""
    cache = tmp_path / "hf-cache"
    repo = cache / f"models--{REPO.replace('/', '--')}"
    shutil.copytree(tiny_llama, repo / "snapshots" / REVISION)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    # huggingface_hub reads HF_HUB_CACHE once, on import (the subprocess test covers the variable itself)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def test_hub_id_loads_from_the_local_cache(hf_cache, tiny_llama):
    loaded = load_model(REPO)
    snapshot = hf_cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / REVISION
    assert loaded.source_dir.resolve() == snapshot.resolve()
    params = SamplingParams(max_tokens=8, ignore_eos=True)
    ids = [1, 2, 3, 4, 5]
    via_hub = Engine.from_pretrained(REPO, dtype="float32", device="cpu", num_blocks=32).generate(ids, params)
    via_dir = Engine.from_pretrained(str(tiny_llama), dtype="float32", device="cpu", num_blocks=32).generate(
        ids, params)
    assert via_hub[0].token_ids == via_dir[0].token_ids and len(via_hub[0].token_ids) == 8


def test_hub_id_not_in_the_cache_says_how_to_get_it(hf_cache):
    with pytest.raises(ModelNotFoundError, match=r"'tinyorg/absent' is no local path and is not in the "
                                                 r"Hugging Face cache .*--allow-download"):
        resolve_source("tinyorg/absent")


def test_allowed_download_still_stays_offline_under_hf_hub_offline(hf_cache, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ModelNotFoundError, match="unset HF_HUB_OFFLINE"):
        resolve_source("tinyorg/absent", allow_download=True)
    assert resolve_source(REPO, allow_download=True).name == REVISION  # the cached copy needs no network


def test_snapshot_without_config_is_refused(hf_cache):
    snapshot = hf_cache / f"models--{REPO.replace('/', '--')}" / "snapshots" / REVISION
    (snapshot / "config.json").unlink()
    with pytest.raises(ModelNotFoundError, match="has no config.json"):
        resolve_source(REPO)


def test_hf_hub_cache_variable_is_honoured_in_a_fresh_process(hf_cache):
    env = {**os.environ, "HF_HUB_CACHE": str(hf_cache), "HF_HUB_OFFLINE": "1"}
    code = f"from deltaserve.engine.loader import resolve_source; print(resolve_source({REPO!r}))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith(f"snapshots/{REVISION}")


def test_unknown_name_lists_the_accepted_forms():
    with pytest.raises(ModelNotFoundError, match="hub id"):
        resolve_source("not a model, not/a/path")
