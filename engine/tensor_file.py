"""One safetensors file, read a tensor at a time and written a tensor at a time.

safetensors' own `load_file` maps the whole file as one storage: every tensor is a view of it, so one tensor
kept (the embedding) keeps every page ever touched resident, and a 3 GB checkpoint converted tensor by tensor
ends with 3 GB of it in the process. Here each tensor is either
  * `view(name)`: a view of a private memory map (pages come in when read, only those; copy-on-write), for
    tensors the model uses as they are (the embedding: a prompt reads a few rows of 150k), or
  * `read(name)`: read into fresh memory with one pread, for tensors transformed at load (cast), so the
    file's pages never count toward the process once the transform is done.
A weight that fbgemm packs is read from its view and its pages are let go once packed (`release_rows`):
they count toward the process only while it is packed, and no copy is made.
`TensorWriter` streams tensors to disk as they are made (a model's converted weights need never all be in
memory) and lays the file out by element size, so every view is aligned to its dtype.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
from collections.abc import Iterable
from pathlib import Path

import torch

from deltaserve.engine.errors import TensorFileError

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
          "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}
MAX_HEADER = 100 << 20
ALIGN = 64  # the data section starts on a cache line


class TensorDict(dict):
    """Tensors in memory behind TensorFile's interface (a model converted without a cache file)."""

    def view(self, name: str) -> torch.Tensor:
        return self[name]

    def read(self, name: str) -> torch.Tensor:
        """The tensor, given up: what is read is transformed at load (packed), so the dict need not keep
        the int8 weights beside their packings."""
        return self.pop(name)

    def shape(self, name: str) -> list[int]:
        return list(self[name].shape)

    def release_rows(self, name: str, start: int, count: int) -> None:
        """Rows read (packed) and done with: the tensor is given up with its last row (views of it keep it
        alive while they live)."""
        if name in self and start + count >= self[name].shape[0]:
            del self[name]


def _bytes(t: torch.Tensor) -> memoryview:
    return memoryview(t.contiguous().reshape(-1).view(torch.uint8).numpy())


class TensorFile:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._fd = os.open(self.path, os.O_RDONLY)
        try:
            self.entries, self.metadata, self._start = self._parse()
        except Exception:
            self.close()  # once: __del__ closing the number again could close a file opened since, elsewhere
            raise
        self._map: mmap.mmap | None = None

    def _parse(self) -> tuple[dict, dict, int]:
        size = os.fstat(self._fd).st_size
        head = os.pread(self._fd, 8, 0)
        if len(head) < 8:
            raise TensorFileError("shorter than a safetensors header")
        (n,) = struct.unpack("<Q", head)
        if n > min(MAX_HEADER, size - 8):
            raise TensorFileError(f"header length {n} does not fit in {size} bytes")
        try:
            header = json.loads(os.pread(self._fd, n, 8))
        except (UnicodeDecodeError, ValueError) as e:
            raise TensorFileError(f"header is not JSON: {e}") from None
        if not isinstance(header, dict):
            raise TensorFileError("header is not a JSON object")
        metadata = header.pop("__metadata__", None) or {}
        end = 0
        for name, e in sorted(header.items(), key=lambda kv: kv[1].get("data_offsets", [0])[0]
                              if isinstance(kv[1], dict) else 0):
            try:
                dtype, shape, (b, stop) = DTYPES[e["dtype"]], [int(d) for d in e["shape"]], e["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise TensorFileError(f"bad entry for {name!r}") from None
            numel = 1
            for d in shape:
                numel *= d
            if b != end or stop - b != numel * dtype.itemsize:
                raise TensorFileError(f"{name!r} at bytes {b}-{stop} leaves a gap or overlaps")
            end = stop
            header[name] = (dtype, shape, b)
        if 8 + n + end != size:
            raise TensorFileError(f"the tensors end at byte {8 + n + end} of {size} (truncated or padded)")
        return header, metadata, 8 + n

    def __contains__(self, name: str) -> bool:
        return name in self.entries

    def keys(self):
        return self.entries.keys()

    def read(self, name: str) -> torch.Tensor:
        """The tensor in fresh memory (one pread straight into it)."""
        dtype, shape, offset = self.entries[name]
        out = torch.empty(shape, dtype=dtype)
        buf, pos, first = _bytes(out), 0, self._start + offset
        while pos < len(buf):
            got = os.preadv(self._fd, [buf[pos:]], first + pos)
            if got <= 0:
                raise TensorFileError(f"{self.path} ended while reading {name!r}")
            pos += got
        return out

    def shape(self, name: str) -> list[int]:
        return list(self.entries[name][1])

    def view(self, name: str) -> torch.Tensor:
        """The tensor as a view of a private map of the file: no copy, and only its pages that are read come
        into memory. Writing to it would copy the page, never change the file."""
        dtype, shape, offset = self.entries[name]
        count = 1
        for d in shape:
            count *= d
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        if self._map is None:
            self._map = mmap.mmap(self._fd, 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        raw = torch.frombuffer(self._map, dtype=torch.uint8, count=count * dtype.itemsize,
                               offset=self._start + offset)
        return raw.view(dtype).reshape(shape)

    def release_rows(self, name: str, start: int, count: int) -> None:
        """The pages that rows [start, start + count) of a viewed tensor fill alone leave this process (they
        stay in the page cache; read again, they come back): a weight packed from its view counts toward
        the process's memory only while it is packed."""
        if self._map is None:
            return
        dtype, shape, offset = self.entries[name]
        row_bytes = dtype.itemsize
        for d in shape[1:]:
            row_bytes *= d
        first, page = self._start + offset + start * row_bytes, mmap.PAGESIZE
        lo, hi = -(-first // page) * page, (first + count * row_bytes) // page * page
        if hi > lo:
            self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def close(self) -> None:
        """Closes the descriptor; views keep their map alive for as long as they live."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self):
        self.close()


class TensorWriter:
    """Streams tensors into `<path>.data` as they come; `finish` writes `path` as one safetensors file, the
    tensors ordered by element size (8-byte ones first), so each one's offset is a multiple of its own."""

    def __init__(self, path: Path, metadata: dict[str, str] | None = None):
        self.path = Path(path)
        self.metadata = dict(metadata or {})
        self._data_path = self.path.with_name(self.path.name + ".data")
        self._data = open(self._data_path, "wb")  # noqa: SIM115 - closed in finish/abort
        self._entries: dict[str, tuple[torch.dtype, list[int], int, int]] = {}
        self._pos = 0

    def add(self, name: str, t: torch.Tensor) -> None:
        if name in self._entries:
            raise ValueError(f"tensor {name!r} written twice")
        t = t.detach().cpu()
        buf = _bytes(t)
        self._data.write(buf)  # buffered: writes all of it
        self._entries[name] = (t.dtype, list(t.shape), self._pos, len(buf))
        self._pos += len(buf)

    def add_all(self, items: Iterable[tuple[str, torch.Tensor]]) -> None:
        for name, t in items:
            self.add(name, t)

    def finish(self) -> None:
        self._data.close()
        order = sorted(self._entries.items(), key=lambda kv: -kv[1][0].itemsize)
        header, offset = {}, 0
        for name, (dtype, shape, _, n) in order:
            header[name] = {"dtype": NAMES[dtype], "shape": shape, "data_offsets": [offset, offset + n]}
            offset += n
        if self.metadata:
            header["__metadata__"] = self.metadata
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-(8 + len(text)) % ALIGN)  # spaces may pad the header (the format allows it)
        with open(self._data_path, "rb") as src, open(self.path, "wb", buffering=0) as dst:
            # unbuffered: copy_file_range appends right after the header
            _write_all(dst, struct.pack("<Q", len(text)) + text)
            for _, (_, _, pos, n) in order:
                _copy_range(src, dst, pos, n)
            os.fsync(dst.fileno())
        self._data_path.unlink()

    def abort(self) -> None:
        self._data.close()
        self._data_path.unlink(missing_ok=True)
        self.path.unlink(missing_ok=True)


def _copy_range(src, dst, pos: int, n: int) -> None:
    """Copy n bytes at src offset pos to dst's current end, in the kernel where it can."""
    done = 0
    while done < n:
        try:
            got = os.copy_file_range(src.fileno(), dst.fileno(), n - done, pos + done)
        except (AttributeError, OSError):
            got = 0
        if got <= 0:  # no copy_file_range here (another OS, another file system): plain reads
            src.seek(pos + done)
            while done < n:
                chunk = src.read(min(8 << 20, n - done))
                if not chunk:
                    raise TensorFileError("the data file ended early")
                _write_all(dst, chunk)
                done += len(chunk)
            return
        done += got


def _write_all(dst, data) -> None:
    view = memoryview(data)
    while view:
        view = view[dst.write(view):]
