from .lru import CacheStats, LRUCache, memoize

__all__ = ["CacheStats", "LRUCache", "memoize"]
