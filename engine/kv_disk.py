"""A disk tier under the prefix cache: full KV blocks as safetensors files that outlive the process.

Layout: `<dir>/kv/<model fingerprint>/<2 hex>/<block hash hex>.safetensors`, one file per full block, keyed
by the block manager's chained hash (which covers the whole prefix and the cache_salt). A file holds the
block's K and V ([layers, kv_heads, block_size, head_dim]) and, as metadata, its token ids, its parent hash
and a checksum of the tensor bytes; a read that fails to parse or to match any of them drops the file and
counts it corrupt, so a bad file is recomputed and never served. Only regular files are read, opened
without following links or blocking (a FIFO named like a block would otherwise hang the engine).

Writes never hold up a step: the engine copies a block's K/V to CPU when the block becomes cached and hands
the copy to `offer`, which queues it for a writer thread or, when the queue is over its byte budget, skips
it. Any write error (a full disk, a quota, a read-only directory) turns writing off with one warning: the
engine goes on memory-only. The directory is kept under a byte budget by evicting least recently used files
(a file's mtime is its last use, so recency survives restarts and is shared by processes on one dir). A
block's stamp is its last use minus DEPTH_NS per block of depth, so within one use a prefix's tail goes
before its head (a tail without its head can never be matched). Processes sharing a dir each see the
others' files only by looking, so the writer rescans the directory at the end of each burst of writes (and
every RESCAN_FRACTION of the budget written) before evicting: the budget holds for the dir, not per process.

The model fingerprint (`model_fingerprint`) covers the weights files (names, sizes, mtimes), the model
config, the dtype, the quantization setting and the block size: a changed model reads from another
directory and can never be served stale KV.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import queue
import stat
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save_file

from deltaserve.engine.kv_cache import KVCache

log = logging.getLogger(__name__)

# In every fingerprint: 2 = block keys hash an unambiguous encoding of salt and tokens (engine/prefix_cache
# block_hash), so version-1 files, keyed by the old hash, sit in another directory and are never read.
FORMAT_VERSION = "2"
SUFFIX = ".safetensors"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")
DEFAULT_MAX_PENDING_BYTES = 256 * 2**20  # CPU copies waiting for the writer; beyond it blocks are skipped
DEPTH_NS = 10_000_000
RESCAN_FRACTION = 16  # rescan the dir after max_bytes / RESCAN_FRACTION written, even mid-burst


def model_fingerprint(source_dir: Path, hf_config, dtype: torch.dtype, block_size: int,
                      quant: str | None) -> str:
    """A short hex id of everything that decides a block's KV values (`quant`: the weight quantization
    settings and anything else the caller wants in the key)."""
    h = hashlib.sha256(f"v{FORMAT_VERSION}|{dtype}|{block_size}|{quant}".encode())
    for f in sorted(Path(source_dir).iterdir()):
        if f.suffix in WEIGHT_SUFFIXES and f.is_file():
            st = f.stat()
            h.update(f"|{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    to_json = getattr(hf_config, "to_json_string", None)
    h.update((to_json(use_diff=False) if to_json else repr(hf_config)).encode())
    return h.hexdigest()[:24]


def tensor_checksum(*tensors: torch.Tensor) -> str:
    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        h.update(t.contiguous().view(torch.uint8).numpy())
    return h.hexdigest()


@dataclass
class DiskStats:
    hits: int = 0  # blocks served from disk
    misses: int = 0  # lookups past the memory cache that found no (valid) block on disk
    bytes_read: int = 0
    bytes_written: int = 0
    blocks_written: int = 0
    corrupt: int = 0  # files that failed their checksum / parse / token check; dropped
    skipped_writes: int = 0  # blocks not written: the writer's queue was full or writing is off
    evictions: int = 0
    write_errors: int = 0


@dataclass
class _Pending:
    key: bytes
    parent: bytes | None
    tokens: tuple[int, ...]
    k: torch.Tensor
    v: torch.Tensor
    stamp: int
    nbytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.nbytes = self.k.numel() * self.k.element_size() * 2


class DiskKVStore:
    """Block files of one model under `root/kv/<fingerprint>/`, bounded to max_bytes."""

    def __init__(self, root: str | Path, fingerprint: str, max_bytes: int,
                 max_pending_bytes: int = DEFAULT_MAX_PENDING_BYTES):
        self.dir = Path(root).expanduser() / "kv" / fingerprint
        self.max_bytes = max_bytes
        self.max_pending_bytes = max_pending_bytes
        self.stats = DiskStats()
        self.writable = True
        self._lock = threading.Lock()
        self._files: dict[str, tuple[int, int]] = {}  # hash hex -> (stamp ns, bytes)
        self._total = 0
        self._written_since_scan = 0
        self._pending_bytes = 0
        self._queue: queue.Queue[_Pending | None] = queue.Queue()
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._scan()
        except OSError as exc:
            self._stop_writing(f"cannot use {self.dir}: {exc}")
        self._thread = threading.Thread(target=self._writer, name="kv-disk-writer", daemon=True)
        self._thread.start()
        atexit.register(_close_at_exit, weakref.ref(self))

    # ---- index ----

    def _path(self, hexkey: str) -> Path:
        return self.dir / hexkey[:2] / (hexkey + SUFFIX)

    def _scan(self) -> None:
        """Index every block file in the directory (this process's and any other's), replacing what was
        known: the mtimes on disk are every process's last uses."""
        files = _block_files(self.dir)
        with self._lock:
            self._files = files
            self._total = sum(size for _, size in files.values())
            self._written_since_scan = 0

    @property
    def total_bytes(self) -> int:
        return self._total

    def has(self, key: bytes) -> bool:
        """Whether a file for `key` exists (this process's index, or one another process wrote since)."""
        hexkey = key.hex()
        with self._lock:
            if hexkey in self._files:
                return True
        try:
            st = self._path(hexkey).stat()
        except OSError:
            return False
        with self._lock:
            if hexkey not in self._files:
                self._files[hexkey] = (st.st_mtime_ns, st.st_size)
                self._total += st.st_size
        return True

    # ---- reads ----

    def load(self, key: bytes, parent: bytes | None, tokens: tuple[int, ...], depth: int,
             shape: tuple[int, ...], dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The block's (K, V) if a valid file for it exists; a bad file is deleted and counted."""
        hexkey = key.hex()
        path = self._path(hexkey)
        try:
            data = _read_regular_file(path)
            meta, k, v = _parse_block(data)
            size = len(data)
        except FileNotFoundError:  # evicted meanwhile (by us or another process)
            self._forget(hexkey)
            self.stats.misses += 1
            return None
        except Exception as exc:  # noqa: BLE001 - any parse failure means a damaged file
            return self._corrupt(hexkey, f"unreadable ({type(exc).__name__}: {exc})")
        if k.shape != shape or v.shape != shape or k.dtype != dtype or v.dtype != dtype:
            return self._corrupt(hexkey, f"holds {tuple(k.shape)} {k.dtype}, not {shape} {dtype}")
        if meta.get("checksum") != tensor_checksum(k, v):
            return self._corrupt(hexkey, "checksum mismatch")
        if meta.get("tokens") != _tokens_text(tokens) or meta.get("parent") != (parent or b"").hex():
            return self._corrupt(hexkey, "token ids or parent differ from the key")
        self.stats.hits += 1
        self.stats.bytes_read += size
        stamp = _stamp(depth)
        with self._lock:
            if hexkey in self._files:
                self._files[hexkey] = (stamp, size)
        try:
            os.utime(path, ns=(stamp, stamp))  # recency for the next process's LRU order
        except OSError:
            pass
        return k, v

    def _corrupt(self, hexkey: str, why: str) -> None:
        log.warning("kv disk cache: dropping block %s: %s (it will be recomputed)", hexkey[:16], why)
        self.stats.corrupt += 1
        self.stats.misses += 1
        self._delete(hexkey)
        return None

    # ---- writes ----

    def offer(self, key: bytes, parent: bytes | None, tokens: tuple[int, ...], depth: int, k: torch.Tensor,
              v: torch.Tensor) -> bool:
        """Queue a block (CPU tensors nobody writes to again) for writing; False if skipped."""
        item = _Pending(key, parent, tokens, k, v, _stamp(depth))
        with self._lock:
            if not self.writable or self._pending_bytes + item.nbytes > self.max_pending_bytes:
                self.stats.skipped_writes += 1
                return False
            self._pending_bytes += item.nbytes
        self._queue.put(item)
        return True

    def flush(self) -> None:
        """Wait until every queued block is written (or dropped)."""
        self._queue.join()

    def close(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._write(item)
            except Exception as exc:  # noqa: BLE001 - a full disk, a quota, a read-only dir: memory-only
                self.stats.write_errors += 1
                self._stop_writing(f"writing {self.dir} failed: {type(exc).__name__}: {exc}")
            finally:
                if item is not None:
                    with self._lock:
                        self._pending_bytes -= item.nbytes
                self._queue.task_done()

    def _write(self, item: _Pending) -> None:
        if not self.writable:
            self.stats.skipped_writes += 1
            return
        hexkey = item.key.hex()
        path = self._path(hexkey)
        if item.nbytes > self.max_bytes:
            self.stats.skipped_writes += 1
            return
        item.k, item.v = item.k.contiguous(), item.v.contiguous()  # slices of one gathered batch
        meta = {"checksum": tensor_checksum(item.k, item.v), "tokens": _tokens_text(item.tokens),
                "parent": (item.parent or b"").hex(), "version": FORMAT_VERSION}
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_name(f".{hexkey}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            save_file({"k": item.k, "v": item.v}, str(tmp), metadata=meta)
            os.utime(tmp, ns=(item.stamp, item.stamp))
            os.replace(tmp, path)  # atomic: readers see the whole file or none
        finally:
            tmp.unlink(missing_ok=True)
        size = path.stat().st_size
        with self._lock:
            self._total += size - self._files.pop(hexkey, (0, 0))[1]
            self._files[hexkey] = (item.stamp, size)
        self.stats.bytes_written += size
        self.stats.blocks_written += 1
        self._written_since_scan += size
        if self._queue.empty() or self._written_since_scan * RESCAN_FRACTION >= self.max_bytes:
            self._scan()  # other processes' files count against the budget too
        self._evict()

    def _evict(self) -> None:
        while True:
            with self._lock:
                if self._total <= self.max_bytes or not self._files:
                    return
                hexkey = min(self._files, key=lambda h: self._files[h][0])
            self._delete(hexkey)
            self.stats.evictions += 1

    def _delete(self, hexkey: str) -> None:
        self._forget(hexkey)
        try:
            self._path(hexkey).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("kv disk cache: cannot delete %s: %s", hexkey[:16], exc)

    def _forget(self, hexkey: str) -> None:
        with self._lock:
            self._total -= self._files.pop(hexkey, (0, 0))[1]

    def _stop_writing(self, why: str) -> None:
        with self._lock:
            was, self.writable = self.writable, False
        if was:
            log.warning("kv disk cache: %s; going on with the in-memory prefix cache only", why)


def _block_files(directory: Path) -> dict[str, tuple[int, int]]:
    """hash hex -> (mtime ns, bytes) of the regular block files under `directory`'s subdirectories. Anything
    else (a dangling link, a FIFO, a temp file) is skipped, as is a file evicted while we look."""
    files = {}
    for sub in _entries(directory):
        if not sub.is_dir(follow_symlinks=False):
            continue
        for entry in _entries(Path(sub.path)):
            if not entry.name.endswith(SUFFIX) or entry.name.startswith("."):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files[entry.name[: -len(SUFFIX)]] = (st.st_mtime_ns, st.st_size)
    return files


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as it:
            return list(it)
    except (FileNotFoundError, NotADirectoryError):  # removed meanwhile
        return []


def _read_regular_file(path: Path) -> bytes:
    """The bytes of the regular file at `path`. A link is refused (ELOOP) and a FIFO or device is neither
    waited on (O_NONBLOCK) nor read: both raise OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return fh.read()


def _parse_block(data: bytes) -> tuple[dict[str, str], torch.Tensor, torch.Tensor]:
    """(metadata, K, V) of a block file's bytes (safetensors: an 8-byte header length, a JSON header)."""
    header_len = int.from_bytes(data[:8], "little")
    meta = json.loads(data[8:8 + header_len]).get("__metadata__") or {}
    tensors = load_tensors(data)
    return meta, tensors["k"], tensors["v"]


def _stamp(depth: int) -> int:
    return time.time_ns() - depth * DEPTH_NS


def _tokens_text(tokens: tuple[int, ...]) -> str:
    return ",".join(map(str, tokens))


def _close_at_exit(ref: weakref.ref) -> None:
    """Blocks queued when the process ends are still written (the thread is a daemon)."""
    store = ref()
    if store is not None:
        store.close()


@dataclass
class BlockRef:
    """A full block as the block manager knows it: its pool slot, chained hash, parent hash, tokens and
    its depth in the prefix (0 = the first block)."""

    block: int
    key: bytes
    parent: bytes | None
    tokens: tuple[int, ...]
    depth: int


class DiskTier:
    """The disk store seen from the block manager: pool blocks out to disk, disk files into pool blocks.
    Both sides copy many blocks in one tensor op (one gather, one scatter), not one op per block."""

    def __init__(self, store: DiskKVStore, kv: KVCache):
        self.store = store
        self.kv = kv
        self.block_shape = tuple(kv.k_blocks[:, :, 0].shape)

    def has(self, key: bytes) -> bool:
        return self.store.has(key)

    def save(self, refs: list[BlockRef]) -> None:
        """Called when blocks become cached full blocks: gather their KV to CPU now (one copy), write them
        later (the writer thread makes each block's slice contiguous)."""
        refs = [r for r in refs if self.store.writable and not self.store.has(r.key)]
        if not refs:
            return
        ids = torch.tensor([r.block for r in refs], device=self.kv.k_blocks.device)
        k = self.kv.k_blocks.index_select(2, ids).cpu()
        v = self.kv.v_blocks.index_select(2, ids).cpu()
        for i, r in enumerate(refs):
            self.store.offer(r.key, r.parent, r.tokens, r.depth, k[:, :, i], v[:, :, i])

    def load(self, ref: BlockRef) -> tuple[torch.Tensor, torch.Tensor] | None:
        """A block's (K, V) from disk, checked; None if absent or bad (then counted a miss)."""
        if not self.store.has(ref.key):
            self.store.stats.misses += 1
            return None
        return self.store.load(ref.key, ref.parent, ref.tokens, ref.depth, self.block_shape,
                               self.kv.k_blocks.dtype)

    def write_into_pool(self, blocks: list[int], loaded: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        ids = torch.tensor(blocks, device=self.kv.k_blocks.device)
        k = torch.stack([kv[0] for kv in loaded], dim=2).to(self.kv.k_blocks.device)
        v = torch.stack([kv[1] for kv in loaded], dim=2).to(self.kv.v_blocks.device)
        self.kv.k_blocks.index_copy_(2, ids, k)
        self.kv.v_blocks.index_copy_(2, ids, v)

    def counts(self) -> dict[str, int]:
        """EngineStats' kv_disk_* fields."""
        s = self.store.stats
        return {"kv_disk_hits": s.hits, "kv_disk_misses": s.misses, "kv_disk_bytes_read": s.bytes_read,
                "kv_disk_bytes_written": s.bytes_written, "kv_disk_corrupt_blocks": s.corrupt,
                "kv_disk_skipped_writes": s.skipped_writes, "kv_disk_evictions": s.evictions,
                "kv_disk_bytes": self.store.total_bytes, "kv_disk_writable": int(self.store.writable)}
