"""The status line while a model loads: its size and the step the load is at, read from outside the engine."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from deltaserve.cli.loading import WEIGHT_CACHE_LOG, LoadPhase, loading_status, model_bytes, size_text
from deltaserve.engine.model_source import gguf_sha256


def test_size_of_a_model_dir(tiny_llama):
    assert model_bytes(str(tiny_llama)) > 0 and size_text(model_bytes(str(tiny_llama))).endswith("MB")
    assert model_bytes("qwen2.5-coder-1.5b") == 1_117_320_768  # the pinned size: nothing assembled for it
    assert model_bytes("/no/such/model") is None and size_text(None) == ""


def test_phases(tmp_path, tiny_llama, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert LoadPhase(str(gguf)).now() == "hashing the GGUF (first start from this file)"
    gguf_sha256(gguf)
    assert LoadPhase(str(gguf)).now() == "converting the GGUF (first start only)"  # no converted dir yet
    phase = LoadPhase(str(tiny_llama))
    assert phase.now() == "reading the tokenizer and weights"
    phase.emit(logging.LogRecord(WEIGHT_CACHE_LOG, logging.INFO, "", 0, "converted weights from %s", ("x",),
                                 None))
    assert phase.now() == "reading the weight cache, packing"


def test_a_terminal_gets_the_line_a_log_nothing(tiny_llama):
    terminal = Console(file=io.StringIO(), force_terminal=True, width=80, color_system=None)
    with loading_status(str(tiny_llama), terminal):
        pass
    assert f"loaded {tiny_llama} in" in terminal.file.getvalue()
    log = Console(file=io.StringIO(), force_terminal=False)
    with loading_status(str(tiny_llama), log), loading_status(None, log):
        pass
    assert log.file.getvalue() == ""
    assert not logging.getLogger(WEIGHT_CACHE_LOG).handlers  # the handler is gone with the block
