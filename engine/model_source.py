"""Where a model's files are, found without loading the model or importing torch: a name or path resolved
to an HF-format directory or a GGUF file (`resolve_source`), the directory a GGUF is converted into
(`gguf_cache_dir`), and the directory of its tokenizer alone (`tokenizer_dir`), so a caller that only
counts tokens (the harness's token counter) starts in a fraction of a second, not the seconds of a model.

What a GGUF is converted into is keyed by its content (`gguf_sha256`), not its path: a reinstalled package,
a fresh clone's venv or a copy of the same file finds the conversion already made (path keys left one
1 GB copy behind per install of the bundled SmolLM2).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

from deltaserve.engine.bundled import (
    BUNDLED,
    bundled_gguf,
    cache_root,
    record_verified,
    recorded_sha256,
    sha256_of,
)
from deltaserve.engine.errors import ModelNotFoundError

ACCEPTED_FORMS = (
    f"accepted forms: {', '.join(repr(n) for n in BUNDLED)} (bundled), "
    "a local Hugging Face checkpoint directory (config.json + *.safetensors), a path to a .gguf file, "
    "or a Hugging Face hub id (org/name)"
)
# The torch dtype dequantized GGUF weights are cached in (engine/loader.py: GGUF_CACHE_DTYPE); part of the
# cache key, so a GGUF's directory is found here without torch.
GGUF_CACHE_DTYPE_NAME = "bfloat16"
# the converted weights' file format (engine/weight_cache.py): part of each file's key; bump when convert()
# or quantize_parts() change what they write
WEIGHT_CACHE_FORMAT = 1


def resolve_source(name_or_path: str, allow_download: bool = False) -> Path:
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
    from deltaserve.engine.hub import hub_snapshot, looks_like_hub_id  # huggingface_hub: 0.2 s; hub ids only

    if looks_like_hub_id(name_or_path):
        snapshot = hub_snapshot(name_or_path, allow_download)
        if not (snapshot / "config.json").is_file():
            raise ModelNotFoundError(f"hub snapshot {snapshot} of {name_or_path!r} has no config.json "
                                     "(a GGUF-only repository? pass the path of one of its .gguf files)")
        return snapshot
    raise ModelNotFoundError(f"unknown model {name_or_path!r}; {ACCEPTED_FORMS}")


def gguf_cache_dir(gguf: Path) -> Path:
    """The HF directory `gguf` is dequantized into (engine/loader.py `convert_gguf`), keyed by the file's
    content and the cached dtype; named after the file, and found under another file's name too."""
    key = conversion_key(gguf_sha256(gguf))
    found = [d for d in (cache_root() / "gguf").glob(f"*-{key}") if (d / "complete.json").is_file()]
    return found[0] if found else cache_root() / "gguf" / f"{gguf.stem}-{key}"


def path_keyed_dir(gguf: Path) -> Path:
    """Where a GGUF's conversion was until 2026-12: keyed by the file's path, size and mtime (engine/loader.py
    `adopt_path_keyed` moves one to its content key)."""
    st = gguf.stat()
    key = f"{gguf.resolve()}|{st.st_size}|{st.st_mtime_ns}|torch.{GGUF_CACHE_DTYPE_NAME}"
    return cache_root() / "gguf" / f"{gguf.stem}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def conversion_key(sha256: str) -> str:
    return hashlib.sha256(f"{sha256}|torch.{GGUF_CACHE_DTYPE_NAME}".encode()).hexdigest()[:16]


def gguf_sha256(gguf: Path) -> str:
    """The sha256 of `gguf`: the bundled file's, recorded when it was verified; another's, hashed once per
    path, size and mtime and recorded under $DELTASERVE_CACHE/hashes/ (a second from a 1 GB file)."""
    sha = known_gguf_sha256(gguf)
    if sha is None:
        sha = sha256_of(gguf)
        try:
            record_verified(gguf, sha, hash_record(gguf))
        except OSError:  # a read-only cache: hash again next time
            pass
    return sha


def known_gguf_sha256(gguf: Path) -> str | None:
    """`gguf_sha256` where it is recorded already; None rather than hashing the file."""
    return recorded_sha256(gguf) or recorded_sha256(gguf, hash_record(gguf))


def checkpoint_identity(source: Path) -> str:
    """What the converted weights of `source` (engine/weight_cache.py) are keyed by: a GGUF's sha256, or a
    directory's weight files by name, size and mtime (hub snapshots are content-addressed already)."""
    if source.is_file():
        return f"gguf-sha256:{gguf_sha256(source)}|dequantized:{GGUF_CACHE_DTYPE_NAME}"
    files = sorted(f for f in source.iterdir() if f.suffix in (".safetensors", ".bin"))
    stats = [(f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in files]
    return f"dir:{source.resolve()}|{json.dumps(stats)}"


def hash_record(path: Path) -> Path:
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]
    return cache_root() / "hashes" / f"{path.name}-{key}.json"


def tokenizer_dir(name_or_path: str) -> Path:
    """A directory holding the model's tokenizer files (tokenizer.json, tokenizer_config.json, its chat
    template) without loading its weights, downloading, or dequantizing a GGUF: a model directory as it
    is; for a GGUF, the directory the engine converted it into where there is one, else its tokenizer
    alone, taken out of the GGUF once into $DELTASERVE_CACHE/tokenizers. ModelNotFoundError otherwise."""
    source = resolve_source(name_or_path)
    if source.is_dir():
        return source
    converted = gguf_cache_dir(source)
    if (converted / "complete.json").is_file():
        return converted
    target = cache_root() / "tokenizers" / converted.name
    if not (target / "tokenizer_config.json").is_file():
        save_gguf_tokenizer(source, target)
    return target


def save_gguf_tokenizer(gguf: Path, target: Path) -> None:
    """The tokenizer of `gguf` (as transformers reads it, the same the converted directory holds) saved to
    `target`, atomically: a concurrent process sees all of it or nothing."""
    from transformers import AutoTokenizer  # heavy (seconds): only the first time a GGUF's tokenizer is read

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(tmp)
        try:
            tmp.rename(target)
        except OSError:  # another process wrote it first
            if not (target / "tokenizer_config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
