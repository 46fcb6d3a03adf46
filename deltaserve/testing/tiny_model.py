"""Tiny random-weight models for tests (engine, server, harness): real architectures, real files.

`make_tiny_model_dir(path, arch)` writes a Hugging Face checkpoint (config.json + model.safetensors) of
a 2-layer model with random weights and SmolLM2's tokenizer (so text round-trips and chat templates
work), loadable by `Engine.from_pretrained(path)` and by transformers itself for reference logits.
"""

from __future__ import annotations

from pathlib import Path

import torch

from deltaserve.engine.model_source import tokenizer_dir

TINY_ARCHS = ("llama", "qwen2", "qwen3", "mistral")


def smollm2_tokenizer_dir() -> Path:
    """A directory holding SmolLM2's tokenizer, taken out of the bundled GGUF once and cached."""
    return tokenizer_dir("smollm2-135m")


def tiny_config(arch: str = "llama", **overrides):
    from transformers import AutoConfig

    if arch not in TINY_ARCHS:
        raise ValueError(f"arch must be one of {TINY_ARCHS}")
    kwargs = dict(
        vocab_size=49152,  # SmolLM2's tokenizer
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=2048,
        rms_norm_eps=1e-6,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=arch == "llama",
        # Larger than the usual 0.02 so random logits have clear winners: greedy comparisons between
        # batch layouts then do not hinge on float rounding.
        initializer_range=0.25,
    )
    if arch == "qwen2":
        kwargs["use_sliding_window"] = False
    if arch == "mistral":
        kwargs["sliding_window"] = None
    kwargs.update(overrides)
    return AutoConfig.for_model(arch, **kwargs)


def make_tiny_model_dir(path, arch: str = "llama", seed: int = 0, **config_overrides) -> Path:
    """Write a tiny random `arch` model + SmolLM2 tokenizer to `path`; return the path."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if (path / "config.json").is_file() and (path / "model.safetensors").is_file():
        return path
    path.mkdir(parents=True, exist_ok=True)
    config = tiny_config(arch, **config_overrides)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(path)
    AutoTokenizer.from_pretrained(smollm2_tokenizer_dir()).save_pretrained(path)
    return path
