"""The converted weights on disk: a model's final tensors (cast, fused, quantized) in one safetensors file per
(checkpoint, settings), so a second start reads them instead of converting again.

Converting the bundled 1.5B model (dequantized GGUF -> bf16 -> int8 with scales) took ~30 s a start; read
back from this file it is what the kernels pack (engine/quant.py) plus a memory map of the rest. The file is
keyed by the checkpoint's identity (a GGUF's sha256; a directory's weight files: names, sizes, mtimes),
every setting the tensors depend on (convert.WeightPlan: dtype, quantization and group size, the head's,
the CPU's int8 levels) and WEIGHT_CACHE_FORMAT (in model_source.py, which `deltaserve cache` reads without
torch), and lives under $DELTASERVE_CACHE/weights/. It is written under a temporary name and renamed into
place whole; one that fails to parse or was written for another key is logged, deleted and converted again
from the checkpoint, which is never touched. Checkpoints under MIN_CACHED_BYTES (the tests' tiny models)
convert in memory: their conversion takes milliseconds.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from deltaserve.engine.bundled import cache_root
from deltaserve.engine.convert import WeightPlan, convert
from deltaserve.engine.model_source import WEIGHT_CACHE_FORMAT
from deltaserve.engine.tensor_file import TensorDict, TensorFile, TensorFileError, TensorWriter

log = logging.getLogger(__name__)

MIN_CACHED_BYTES = 256 << 20


@dataclass
class ConvertedWeights:
    """The engine's tensors (a TensorFile or a TensorDict: view / read by name) and each linear's spec."""

    tensors: TensorFile | TensorDict
    linears: dict[str, dict]
    path: Path | None = None  # the cache file, where there is one


class Scoped:
    """One linear's parts: `view("q")` is tensors.view("<name>.q")."""

    def __init__(self, tensors, name: str):
        self.tensors, self.prefix = tensors, name + "."

    def __contains__(self, part: str) -> bool:
        return self.prefix + part in self.tensors

    def view(self, part: str):
        return self.tensors.view(self.prefix + part)

    def read(self, part: str):
        return self.tensors.read(self.prefix + part)

    def shape(self, part: str) -> list[int]:
        return self.tensors.shape(self.prefix + part)

    def release_rows(self, part: str, start: int, count: int) -> None:
        self.tensors.release_rows(self.prefix + part, start, count)


def cache_key(identity: str, plan: WeightPlan) -> str:
    return json.dumps({"format": WEIGHT_CACHE_FORMAT, "source": identity, **plan.settings()}, sort_keys=True)


def cache_path(identity: str, plan: WeightPlan, label: str = "model") -> Path:
    """The cache file for (identity, plan): named after the checkpoint (`label`) for people, found by its
    key's digest alone, so one written under another label (a renamed copy of the GGUF) is found too."""
    digest = hashlib.sha256(cache_key(identity, plan).encode()).hexdigest()[:16]
    found = sorted((cache_root() / "weights").glob(f"*-{digest}.safetensors"))
    if found:
        return found[0]
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", label)[:80] or "model"
    return cache_root() / "weights" / f"{label}-{digest}.safetensors"


def converted_weights(weights, plan: WeightPlan) -> ConvertedWeights:
    """`weights` converted by `plan`: from the cache file where one holds them, else converted now (and
    cached where `weights` names its checkpoint, `weights.identity`, and is large enough to pay)."""
    identity = getattr(weights, "identity", None)
    if identity is None or getattr(weights, "nbytes", 0) < MIN_CACHED_BYTES:
        return in_memory(weights, plan)
    path = cache_path(identity, plan, getattr(weights, "label", "model"))
    key = cache_key(identity, plan)
    found = open_cached(path, key)
    if found is not None:
        log.info("converted weights from %s", path)
        return found
    try:
        write_cache(weights, plan, path, key)
    except OSError as e:  # a read-only or full disk: run without a cache file
        log.warning("cannot write the weight cache %s (%s); converting in memory", path, e)
        return in_memory(weights.reopen(), plan)
    found = open_cached(path, key)
    if found is None:
        raise OSError(f"the weight cache {path} just written does not read back")
    return found


def in_memory(weights, plan: WeightPlan) -> ConvertedWeights:
    linears: dict[str, dict] = {}
    tensors = TensorDict(convert(weights, plan, linears))
    return ConvertedWeights(tensors, linears)


def open_cached(path: Path, key: str) -> ConvertedWeights | None:
    """The cache file at `path` if it is whole and was written for `key`; an unreadable one is deleted."""
    if not path.is_file():
        return None
    try:
        tensors = TensorFile(path)
        meta = tensors.metadata
        if meta.get("key") != key:
            raise TensorFileError("written for other settings or another format version")
        linears = json.loads(meta["linears"])
        missing = [n for n, spec in linears.items() if spec["mode"] != "tied" and not any(
            k.startswith(n + ".") for k in tensors.keys())]
        if missing:
            raise TensorFileError(f"no tensors for {', '.join(missing[:3])}")
    except (OSError, TensorFileError, KeyError, TypeError, ValueError) as e:
        log.warning("weight cache %s is unusable (%s); deleting it and converting again", path, e)
        path.unlink(missing_ok=True)
        return None
    return ConvertedWeights(tensors, linears, path)


def write_cache(weights, plan: WeightPlan, path: Path, key: str) -> None:
    """Convert `weights` straight into the cache file (one tensor in memory at a time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    writer = TensorWriter(tmp)
    t0 = time.perf_counter()
    try:
        linears: dict[str, dict] = {}
        writer.add_all(convert(weights, plan, linears))
        writer.metadata.update({"key": key, "linears": json.dumps(linears)})
        writer.finish()
        os.replace(tmp, path)  # atomic: a concurrent start sees the whole file or none
    except BaseException:
        writer.abort()
        raise
    log.info("converted weights cached in %s (%.1f s)", path, time.perf_counter() - t0)
