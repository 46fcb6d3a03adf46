"""fbgemm's weight packing at load, in worker threads.

fbgemm's int8 GEMM (the w8a8 layers and the int8 head, engine/quant.py) runs on its own packed copy of each
weight, which no file can hold: torch exposes it only as an opaque object. Packing is the bulk of a start
from the weight cache (~3 ns a weight on a 2-core EPYC, big weights packed in parts: ~4.5 s single-threaded
for the 1.5B model), and torch's op releases the GIL, so a `Packer` runs the packs on `workers` threads
while the main thread maps the next weights; at most `2 x workers` packs wait at once, so the int8 weights
mapped for them never pile up in memory (each part's pages leave the process once it is packed).

glibc keeps freed blocks under its mmap threshold (raised as large blocks are freed, up to 32 MB) in its
heaps, one per thread: the int8 weights once read and copied for packing (up to 28 MB each) stayed as holes
between the packed ones, 400 MB of the 1.5B model's resident memory. While packing, blocks from 1 MB are
mapped on their own, so each goes back to the system when freed; afterwards the thresholds are where
glibc's own adjustment ends up (mmap 32 MB, trim 64 MB) and the heaps are trimmed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import torch

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
PACKING_MMAP_THRESHOLD = 1 << 20
DEFAULT_MMAP_THRESHOLD = 32 << 20


@functools.cache
def _libc():
    """glibc, or None (another libc: nothing to tune)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def set_mmap_threshold(nbytes: int) -> None:
    """Blocks from `nbytes` are mapped on their own; a heap's free top from twice that goes back (glibc's
    own ratio, which setting either stops it adjusting)."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, nbytes)
        libc.mallopt(M_TRIM_THRESHOLD, 2 * nbytes)


def trim_heaps() -> None:
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


class Packer:
    """`with Packer() as p: lin.packed = p.submit(fn, *args)` ...; on exit every submitted future is done and
    `resolve(obj)` turns an object's list of futures into the tuple of their results."""

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers if workers is not None else torch.get_num_threads())
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="pack") if self.workers > 1 else None
        self._slots = threading.Semaphore(2 * self.workers)
        self._owners: list = []
        self._engine = None

    def __enter__(self) -> Packer:
        # fbgemm packs for the global quantized engine: set it once here, not per pack (threads would race)
        self._engine = torch.backends.quantized.engine
        if "fbgemm" in torch.backends.quantized.supported_engines:
            torch.backends.quantized.engine = "fbgemm"
        set_mmap_threshold(PACKING_MMAP_THRESHOLD)
        return self

    def submit(self, fn, *args) -> Future:
        if self._pool is None:
            done: Future = Future()
            done.set_result(fn(*args))
            return done
        self._slots.acquire()
        future = self._pool.submit(fn, *args)
        future.add_done_callback(lambda _: self._slots.release())
        return future

    def defer(self, owner) -> None:
        """`owner.packed` is a list of futures: replaced by the tuple of their results on exit."""
        self._owners.append(owner)

    def __exit__(self, *exc) -> None:
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            if exc[0] is None:
                for owner in self._owners:
                    owner.packed = tuple(f.result() for f in owner.packed)
        finally:
            torch.backends.quantized.engine = self._engine
            set_mmap_threshold(DEFAULT_MMAP_THRESHOLD)
            trim_heaps()
