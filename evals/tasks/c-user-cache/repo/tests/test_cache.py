from userdir.cache import MISSING, TTLCache


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_entries_expire_after_ttl():
    clock = Clock()
    cache = TTLCache(ttl=10, clock=clock)
    cache.set("a", 1)
    clock.now = 9.9
    assert cache.get("a") == 1
    clock.now = 10
    assert cache.get("a") is MISSING


def test_none_is_a_cached_value():
    cache = TTLCache()
    cache.set("k", None)
    assert cache.get("k") is None and "k" in cache
    assert cache.get("other") is MISSING


def test_lru_eviction_and_delete():
    cache = TTLCache(max_entries=2)
    cache.set("a", 1)
    cache.set("b", 2)
    cache.get("a")
    cache.set("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.stats.evictions == 1
    cache.delete("a", "nope")
    assert "a" not in cache and len(cache) == 1


def test_get_or_load_loads_once():
    calls = []
    cache = TTLCache()
    assert cache.get_or_load("x", lambda: calls.append(1) or 5) == 5
    assert cache.get_or_load("x", lambda: calls.append(1) or 6) == 5
    assert calls == [1]
