"""A small TTL + LRU cache. Values may be None (negative caching), so misses are told apart by `MISSING`."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

MISSING = object()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0


class TTLCache:
    def __init__(self, ttl: float = 300.0, max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic):
        if ttl <= 0 or max_entries < 1:
            raise ValueError("ttl must be positive and max_entries at least 1")
        self.ttl = ttl
        self.max_entries = max_entries
        self.clock = clock
        self._entries: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self.stats = CacheStats()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not MISSING

    def get(self, key: str) -> Any:
        """The cached value, or MISSING when absent or expired."""
        entry = self._entries.get(key)
        if entry is None:
            self.stats.misses += 1
            return MISSING
        expires, value = entry
        if self.clock() >= expires:
            del self._entries[key]
            self.stats.misses += 1
            return MISSING
        self._entries.move_to_end(key)
        self.stats.hits += 1
        return value

    def set(self, key: str, value: Any) -> None:
        self._entries[key] = (self.clock() + self.ttl, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)
            self.stats.evictions += 1

    def delete(self, *keys: str) -> None:
        """Drop `keys`; absent keys are fine."""
        for key in keys:
            self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def get_or_load(self, key: str, load: Callable[[], Any]) -> Any:
        value = self.get(key)
        if value is MISSING:
            value = load()
            self.set(key, value)
        return value
