"""engine/model_source.py: a model's files and its tokenizer alone, found without torch or the model."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import torch

from deltaserve.engine import model_source
from deltaserve.engine.bundled import bundled_gguf
from deltaserve.engine.model_source import gguf_cache_dir, tokenizer_dir


def test_it_imports_no_torch():
    code = "import sys, deltaserve.engine.model_source; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_conversion_cache_key_is_the_loader_s(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    st = gguf.stat()
    key = f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}|{torch.bfloat16}"  # as engine/loader.py keyed it
    assert gguf_cache_dir(gguf).name == f"m-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def test_a_model_directory_is_its_own_tokenizer_dir(tiny_llama):
    assert tokenizer_dir(str(tiny_llama)) == tiny_llama


def test_a_gguf_s_tokenizer_is_taken_out_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path))
    first = tokenizer_dir("smollm2-135m")  # no converted directory in this cache: the tokenizer alone
    assert first == tmp_path / "tokenizers" / gguf_cache_dir(bundled_gguf("smollm2-135m")).name
    assert (first / "tokenizer.json").is_file() and not (first / "model.safetensors").exists()
    assert [p.name for p in (tmp_path / "tokenizers").iterdir()] == [first.name]  # no temporary left
    monkeypatch.setattr(model_source, "save_gguf_tokenizer", lambda *a: (_ for _ in ()).throw(AssertionError))
    assert tokenizer_dir("smollm2-135m") == first


def test_the_engine_s_converted_directory_comes_first(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path))
    converted = gguf_cache_dir(bundled_gguf("smollm2-135m"))
    converted.mkdir(parents=True)
    (converted / "complete.json").write_text("{}")
    assert tokenizer_dir("smollm2-135m") == converted
