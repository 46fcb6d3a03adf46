"""engine/model_source.py: a model's files and its tokenizer alone, found without torch or the model."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from deltaserve.engine import model_source
from deltaserve.engine.bundled import bundled_gguf
from deltaserve.engine.model_source import gguf_cache_dir, gguf_sha256, known_gguf_sha256, tokenizer_dir


def test_it_imports_no_torch():
    code = "import sys, deltaserve.engine.model_source; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_a_gguf_s_conversion_is_keyed_by_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))
    first, copy, other = tmp_path / "m.gguf", tmp_path / "elsewhere" / "m.gguf", tmp_path / "n.gguf"
    copy.parent.mkdir()
    first.write_bytes(b"GGUF one")
    copy.write_bytes(b"GGUF one")
    other.write_bytes(b"GGUF two")
    assert gguf_cache_dir(first) == gguf_cache_dir(copy) != gguf_cache_dir(other)
    assert gguf_sha256(first) == hashlib.sha256(b"GGUF one").hexdigest()
    # hashed once per file: the record answers until the file changes
    monkeypatch.setattr(model_source, "sha256_of", lambda p: (_ for _ in ()).throw(AssertionError(p)))
    assert gguf_sha256(copy) == gguf_sha256(first) and known_gguf_sha256(other) is not None
    copy.write_bytes(b"GGUF three")
    assert known_gguf_sha256(copy) is None


def test_a_conversion_is_found_under_another_file_s_name(tmp_path, monkeypatch):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "a.gguf").write_bytes(b"GGUF")
    (tmp_path / "b.gguf").write_bytes(b"GGUF")
    converted = gguf_cache_dir(tmp_path / "a.gguf")
    assert converted.name.startswith("a-") and gguf_cache_dir(tmp_path / "b.gguf").name.startswith("b-")
    converted.mkdir(parents=True)
    (converted / "complete.json").write_text("{}")
    assert gguf_cache_dir(tmp_path / "b.gguf") == converted


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
