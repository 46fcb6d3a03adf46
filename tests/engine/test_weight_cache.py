"""The converted-weights cache (engine/weight_cache.py): a model read back from it computes what the freshly
converted one does; the key follows every setting; a broken file is rebuilt, never used."""

from __future__ import annotations

import logging

import pytest
import torch
from safetensors import safe_open

from deltaserve.engine import Engine, SamplingParams
from deltaserve.engine import weight_cache as wc
from deltaserve.engine.convert import WeightPlan
from deltaserve.engine.forward_batch import Span
from deltaserve.engine.loader import load_model
from deltaserve.engine.quant import dynamic_int8_works
from deltaserve.engine.tensor_file import TensorFile, TensorWriter

MODES = ["none", "int8", "int4"] + (["w8a8"] if dynamic_int8_works() else [])
PROMPT = list(range(100, 137))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache root, and the tiny models cached too (they are under MIN_CACHED_BYTES)."""
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(wc, "MIN_CACHED_BYTES", 0)
    return tmp_path / "cache" / "weights"


def engine(path, **config) -> Engine:
    config = {"dtype": "float32", "num_blocks": 16, "speculative": False, "device": "cpu",
              "enable_prefix_caching": False, **config}
    return Engine.from_pretrained(str(path), **config)


def logits(eng: Engine) -> torch.Tensor:
    """Prefill logits of every prompt position, then one decode step's."""
    prefill = eng.runner.logits([Span(PROMPT[:-1], 0, [0, 1, 2], list(range(len(PROMPT) - 1)))])
    decode = eng.runner.logits([Span(PROMPT[-1:], len(PROMPT) - 1, [0, 1, 2], [0])])
    return torch.cat([prefill, decode])


@pytest.mark.parametrize("quant", MODES)
def test_cold_and_warm_cache_compute_the_same_logits(tiny_model_dirs, cache, quant):
    path = tiny_model_dirs["qwen2"]
    cold = engine(path, quant=quant)
    files = list(cache.glob("*.safetensors"))
    assert len(files) == 1 and cold.model.weights_file == files[0]
    warm = engine(path, quant=quant)
    assert warm.model.weights_file == files[0] and list(cache.glob("*.safetensors")) == files
    assert torch.equal(logits(cold), logits(warm))


def test_in_memory_conversion_computes_the_same_logits(tiny_model_dirs, cache, monkeypatch):
    """A checkpoint under MIN_CACHED_BYTES is converted in memory: same tensors, same logits."""
    quant = MODES[-1]
    cached = engine(tiny_model_dirs["llama"], quant=quant)
    monkeypatch.setattr(wc, "MIN_CACHED_BYTES", 1 << 40)
    fresh = engine(tiny_model_dirs["llama"], quant=quant)
    assert fresh.model.weights_file is None and cached.model.weights_file is not None
    assert torch.equal(logits(cached), logits(fresh))


def plan(**changes) -> WeightPlan:
    base = dict(num_layers=2, num_heads=4, num_kv_heads=2, head_dim=16, dtype=torch.bfloat16, quant="int4",
                group_size=32, head_quant="int8", prepack=False)
    return WeightPlan(**{**base, **changes})


def test_the_key_changes_with_every_setting_and_the_checkpoint():
    same = wc.cache_path("gguf-sha256:ab", plan())
    assert wc.cache_path("gguf-sha256:ab", plan()) == same
    changes = ({"dtype": torch.float32}, {"quant": "int8"}, {"quant": "w8a8"}, {"group_size": 64},
               {"head_quant": "none"}, {"prepack": True}, {"num_layers": 3})
    others = [wc.cache_path("gguf-sha256:cd", plan())]
    others += [wc.cache_path("gguf-sha256:ab", plan(**change)) for change in changes]
    assert len({same, *others}) == len(others) + 1


def test_the_checkpoint_identity_follows_its_files(tiny_model_dirs, tmp_path):
    import shutil

    copy = shutil.copytree(tiny_model_dirs["llama"], tmp_path / "copy")
    before = load_model(str(copy)).weights.identity
    assert load_model(str(copy)).weights.identity == before
    (copy / "model.safetensors").write_bytes((copy / "model.safetensors").read_bytes())  # a new mtime
    assert load_model(str(copy)).weights.identity != before


@pytest.mark.parametrize("damage", ["truncated", "garbage", "other key"])
def test_a_broken_cache_file_is_rebuilt(tiny_model_dirs, cache, caplog, damage):
    path = tiny_model_dirs["qwen2"]
    reference = logits(engine(path, quant=MODES[-1]))
    (file,) = cache.glob("*.safetensors")
    if damage == "truncated":
        with open(file, "r+b") as f:
            f.truncate(file.stat().st_size // 2)
    elif damage == "garbage":
        file.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json at all!" + b"\0" * 100)
    else:
        w = TensorWriter(file, {"key": "{}", "linears": "{}"})
        w.add("embed", torch.zeros(2, 2))
        w.finish()
    with caplog.at_level(logging.WARNING, logger=wc.__name__):
        again = engine(path, quant=MODES[-1])
    assert "is unusable" in caplog.text and str(file) in caplog.text
    assert again.model.weights_file == file and TensorFile(file).metadata["key"] != "{}"
    assert torch.equal(logits(again), reference)


def test_an_unwritable_cache_converts_in_memory(tiny_model_dirs, cache, caplog):
    cache.parent.mkdir(parents=True)
    cache.write_text("a file where the folder should be")
    with caplog.at_level(logging.WARNING, logger=wc.__name__):
        eng = engine(tiny_model_dirs["llama"], quant=MODES[-1])
    assert eng.model.weights_file is None and "cannot write the weight cache" in caplog.text
    assert len(eng.generate(PROMPT, SamplingParams(max_tokens=3, ignore_eos=True))[0].token_ids) == 3


def test_tensor_file_round_trip(tmp_path):
    """Every dtype back exactly, read or viewed; views aligned to their dtype whatever the write order; the
    file is standard safetensors."""
    tensors = {"b": torch.tensor([True, False, True]), "u8": torch.arange(5, dtype=torch.uint8),
               "bf16": torch.randn(3, 7).bfloat16(), "f32": torch.randn(4, 5), "i64": torch.arange(3),
               "empty": torch.zeros(0, 4), "i8": torch.randint(-128, 127, (9,), dtype=torch.int8)}
    w = TensorWriter(tmp_path / "t.safetensors", {"note": "x"})
    for name, t in tensors.items():
        w.add(name, t)
    w.finish()
    assert not (tmp_path / "t.safetensors.data").exists()
    f = TensorFile(tmp_path / "t.safetensors")
    assert f.metadata == {"note": "x"} and set(f.keys()) == set(tensors)
    for name, t in tensors.items():
        assert torch.equal(f.read(name), t) and torch.equal(f.view(name), t)
        assert f.view(name).data_ptr() % t.element_size() == 0
    with safe_open(tmp_path / "t.safetensors", "pt") as ref:
        assert all(torch.equal(ref.get_tensor(n), t) for n, t in tensors.items())
