import pytest

from throttle import (
    FixedWindow,
    KeyedLimiter,
    ManualClock,
    RateLimitExceeded,
    SlidingWindowLog,
    TokenBucket,
    rate_limited,
)
from throttle.limiters import wait_and_acquire


def test_bucket_allows_burst_up_to_capacity():
    clock = ManualClock()
    bucket = TokenBucket(rate=5, capacity=5, clock=clock)
    assert all(bucket.try_acquire() for _ in range(5))
    assert not bucket.try_acquire()


def test_bucket_refills_at_rate_not_capacity():
    clock = ManualClock()
    bucket = TokenBucket(rate=1, capacity=10, clock=clock)
    assert bucket.try_acquire(10)
    clock.advance(1.0)
    assert bucket.tokens == pytest.approx(1.0)
    assert bucket.try_acquire()
    assert not bucket.try_acquire()


def test_bucket_pacing_over_time():
    clock = ManualClock()
    bucket = TokenBucket(rate=2, capacity=20, clock=clock)
    bucket.try_acquire(20)
    granted = 0
    for _ in range(10):
        clock.advance(0.5)
        granted += bucket.try_acquire()
    assert granted == 10
    clock.advance(3.0)
    assert bucket.tokens == pytest.approx(6.0)


def test_bucket_retry_after():
    clock = ManualClock()
    bucket = TokenBucket(rate=4, capacity=4, clock=clock)
    bucket.try_acquire(4)
    assert bucket.retry_after(2) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        bucket.try_acquire(5)


def test_fixed_window():
    clock = ManualClock(start=10.0)
    window = FixedWindow(limit=2, window=10, clock=clock)
    assert window.try_acquire() and window.try_acquire()
    assert not window.try_acquire()
    clock.advance(4.0)
    assert window.retry_after() == pytest.approx(6.0)
    clock.advance(6.0)
    assert window.remaining == 2


def test_sliding_window_log():
    clock = ManualClock()
    log = SlidingWindowLog(limit=3, window=60, clock=clock)
    for step in range(3):
        assert log.try_acquire()
        clock.advance(10)
    assert not log.try_acquire()
    assert log.retry_after() == pytest.approx(30)
    clock.advance(30)
    assert log.try_acquire()


def test_keyed_limiter_and_prune():
    clock = ManualClock()
    keyed = KeyedLimiter(lambda: FixedWindow(1, 60, clock=clock), idle_ttl=100, clock=clock)
    assert keyed.try_acquire("alice")
    assert not keyed.try_acquire("alice")
    assert keyed.try_acquire("bob")
    clock.advance(150)
    assert keyed.prune() == 2
    assert len(keyed) == 0


def test_rate_limited_decorator():
    clock = ManualClock()
    keyed = KeyedLimiter(lambda: TokenBucket(1, 1, clock=clock), clock=clock)

    @rate_limited(keyed, key_func=lambda user: user)
    def fetch(user):
        return f"data for {user}"

    assert fetch("ann") == "data for ann"
    with pytest.raises(RateLimitExceeded) as info:
        fetch("ann")
    assert info.value.retry_after == pytest.approx(1.0)
    assert fetch("ben") == "data for ben"


def test_wait_and_acquire_uses_sleep():
    clock = ManualClock()
    bucket = TokenBucket(rate=10, capacity=1, clock=clock)
    bucket.try_acquire()
    waited = wait_and_acquire(bucket, sleep=clock.advance)
    assert waited == pytest.approx(0.1)
    with pytest.raises(RateLimitExceeded):
        wait_and_acquire(bucket, sleep=clock.advance, max_wait=0.01)
