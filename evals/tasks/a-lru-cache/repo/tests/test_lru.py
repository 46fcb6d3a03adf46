import pytest

from memo import LRUCache, memoize


def test_get_and_put():
    cache = LRUCache(2)
    cache.put("a", 1)
    assert cache.get("a") == 1
    assert cache.get("zz", "none") == "none"
    assert cache.stats.hits == 1 and cache.stats.misses == 1


def test_evicts_least_recently_used():
    evicted = []
    cache = LRUCache(2, on_evict=lambda k, v: evicted.append(k))
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert cache.keys() == ["a", "c"]
    assert evicted == ["b"]


def test_update_existing_key_in_full_cache_keeps_others():
    evicted = []
    cache = LRUCache(2, on_evict=lambda k, v: evicted.append(k))
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("b", 20)
    assert len(cache) == 2
    assert cache.peek("a") == 1 and cache.peek("b") == 20
    assert evicted == []
    assert cache.stats.evictions == 0


def test_update_marks_key_recent():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 3)
    cache.put("c", 4)
    assert cache.keys() == ["a", "c"]


def test_peek_does_not_change_order():
    cache = LRUCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.peek("a")
    cache.put("c", 3)
    assert "a" not in cache


def test_resize_and_pop():
    cache = LRUCache(3)
    for key in "abc":
        cache.put(key, key.upper())
    cache.resize(1)
    assert cache.keys() == ["c"]
    assert cache.pop("c") == "C"
    with pytest.raises(KeyError):
        cache.pop("c")
    with pytest.raises(ValueError):
        cache.resize(0)


def test_memoize():
    calls = []

    @memoize(capacity=2)
    def square(x):
        calls.append(x)
        return x * x

    assert [square(3), square(3), square(4)] == [9, 9, 16]
    assert calls == [3, 4]
    assert square.cache.stats.hit_rate == pytest.approx(1 / 3)
