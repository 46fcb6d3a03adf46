"""A least-recently-used cache with a fixed capacity, eviction callbacks and statistics."""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass

_MISSING = object()


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    evictions: int = 0

    @property
    def hit_rate(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0


class LRUCache:
    """Maps keys to values, dropping the least recently used entry once `capacity` is exceeded.

    `get` and `put` both count as a use; `peek` and `in` do not.
    `on_evict(key, value)` is called for every entry dropped to make room (not for `pop` or `clear`).
    """

    def __init__(self, capacity: int, on_evict=None):
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self.stats = CacheStats()
        self._on_evict = on_evict
        self._data: OrderedDict = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"LRUCache(capacity={self.capacity}, size={len(self._data)})"

    def get(self, key, default=None):
        """The value for `key` (marking it most recently used), or `default`."""
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            self.stats.misses += 1
            return default
        self.stats.hits += 1
        self._data.move_to_end(key)
        return value

    def peek(self, key, default=None):
        """The value for `key` without touching its recency or the statistics."""
        return self._data.get(key, default)

    def put(self, key, value) -> None:
        """Insert or replace `key`; evicts the least recently used entry when full."""
        if len(self._data) >= self.capacity:
            self._evict_oldest()
        self._data[key] = value
        self._data.move_to_end(key)

    def pop(self, key, default=_MISSING):
        """Remove `key` and return its value; KeyError when absent and no default is given."""
        if default is _MISSING:
            return self._data.pop(key)
        return self._data.pop(key, default)

    def resize(self, capacity: int) -> None:
        """Change the capacity, evicting the oldest entries if the cache is now too full."""
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        while len(self._data) > self.capacity:
            self._evict_oldest()

    def clear(self) -> None:
        self._data.clear()

    def keys(self) -> list:
        """Keys from least to most recently used."""
        return list(self._data)

    def _evict_oldest(self) -> None:
        key, value = self._data.popitem(last=False)
        self.stats.evictions += 1
        if self._on_evict is not None:
            self._on_evict(key, value)


def memoize(capacity: int = 128):
    """Decorator caching a function's results by its positional arguments."""

    def decorate(func):
        cache = LRUCache(capacity)

        @functools.wraps(func)
        def wrapper(*args):
            result = cache.get(args, _MISSING)
            if result is _MISSING:
                result = func(*args)
                cache.put(args, result)
            return result

        wrapper.cache = cache
        return wrapper

    return decorate
