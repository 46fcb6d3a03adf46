"""A GGUF is dequantized once, in a process of its own (engine/loader.py convert_gguf): the engine's process
never holds transformers' whole dequantized model; where no child can run, it converts in-process."""

from __future__ import annotations

import hashlib
import subprocess

from deltaserve.engine import loader


def fake_gguf(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    return gguf


def test_the_conversion_runs_in_a_child_process(tmp_path, monkeypatch):
    gguf = fake_gguf(tmp_path, monkeypatch)
    seen = []

    def child(cmd, check):
        seen.append(cmd)
        target = loader.gguf_cache_dir(gguf)
        target.mkdir(parents=True)
        (target / "complete.json").write_text("{}")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(loader.subprocess, "run", child)
    monkeypatch.setattr(loader, "dequantize_gguf", lambda *a: (_ for _ in ()).throw(AssertionError("here")))
    assert loader.convert_gguf(gguf) == loader.gguf_cache_dir(gguf)
    assert seen and seen[0][-1] == str(gguf) and "dequantize_gguf" in seen[0][-2]
    assert loader.convert_gguf(gguf) == loader.gguf_cache_dir(gguf) and len(seen) == 1  # cached


def test_without_a_child_it_converts_here(tmp_path, monkeypatch):
    gguf = fake_gguf(tmp_path, monkeypatch)

    def no_child(cmd, check):
        raise OSError("no fork here")

    def here(g, target):
        target.mkdir(parents=True)
        (target / "complete.json").write_text("{}")

    monkeypatch.setattr(loader.subprocess, "run", no_child)
    monkeypatch.setattr(loader, "dequantize_gguf", here)
    assert (loader.convert_gguf(gguf) / "complete.json").is_file()


def test_a_path_keyed_conversion_moves_to_the_content_key(tmp_path, monkeypatch):
    gguf = fake_gguf(tmp_path, monkeypatch)
    st = gguf.stat()
    key = f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}|torch.bfloat16"  # the key until 2026-12
    old = tmp_path / "cache" / "gguf" / f"m-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    old.mkdir(parents=True)
    (old / "complete.json").write_text("{}")
    monkeypatch.setattr(loader.subprocess, "run", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
    converted = loader.convert_gguf(gguf)
    assert converted == loader.gguf_cache_dir(gguf) != old
    assert (converted / "complete.json").is_file() and not old.exists()
