"""Rate limiters for API clients and request handlers.

Three algorithms share one small interface (`try_acquire(n)` -> bool, `retry_after(n)` -> seconds):

- TokenBucket: smooth rate with bursts up to `capacity`.
- FixedWindow: at most `limit` calls per aligned window (cheap, but allows 2x bursts at window edges).
- SlidingWindowLog: exact "at most `limit` calls in any `window` seconds", at O(limit) memory.

All of them read time from an injectable clock so they can be tested without sleeping.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections import deque
from typing import Callable, Protocol


class Clock(Protocol):
    def __call__(self) -> float: ...


class ManualClock:
    """A clock for tests and simulations: time only moves when `advance` is called."""

    def __init__(self, start: float = 0.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time cannot go backwards")
        self.now += seconds


class RateLimitExceeded(Exception):
    """Raised by `rate_limited` callers when no permit is available."""

    def __init__(self, retry_after: float, key: str | None = None):
        self.retry_after = retry_after
        self.key = key
        where = f" for {key!r}" if key is not None else ""
        super().__init__(f"rate limit exceeded{where}; retry in {retry_after:.3f}s")


def _check_positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


class TokenBucket:
    """Tokens drip in at `rate` per second up to `capacity`; each call spends `n` tokens.

    The bucket starts full, so a fresh client may burst `capacity` calls before being paced to `rate`.
    """

    def __init__(self, rate: float, capacity: float, clock: Clock = time.monotonic):
        _check_positive("rate", rate)
        _check_positive("capacity", capacity)
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._tokens = float(capacity)
        self._updated = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._updated)
        self._tokens = min(self.capacity, self._tokens + elapsed * self.capacity)
        self._updated = now

    @property
    def tokens(self) -> float:
        """Tokens available right now."""
        with self._lock:
            self._refill()
            return self._tokens

    def try_acquire(self, n: float = 1) -> bool:
        """Spend `n` tokens if available; never blocks."""
        if n > self.capacity:
            raise ValueError(f"cannot acquire {n} tokens from a bucket of capacity {self.capacity}")
        with self._lock:
            self._refill()
            if self._tokens >= n:
                self._tokens -= n
                return True
            return False

    def retry_after(self, n: float = 1) -> float:
        """Seconds until `n` tokens will be available (0 when they already are)."""
        with self._lock:
            self._refill()
            missing = n - self._tokens
            return max(0.0, missing / self.rate)

    def reset(self) -> None:
        with self._lock:
            self._tokens = float(self.capacity)
            self._updated = self._clock()


class FixedWindow:
    """At most `limit` permits per window of `window` seconds, windows aligned to multiples of `window`."""

    def __init__(self, limit: int, window: float, clock: Clock = time.monotonic):
        _check_positive("limit", limit)
        _check_positive("window", window)
        self.limit = limit
        self.window = window
        self._clock = clock
        self._window_index = self._current_index()
        self._count = 0
        self._lock = threading.Lock()

    def _current_index(self) -> int:
        return math.floor(self._clock() / self.window)

    def _roll(self) -> None:
        index = self._current_index()
        if index != self._window_index:
            self._window_index = index
            self._count = 0

    def try_acquire(self, n: int = 1) -> bool:
        with self._lock:
            self._roll()
            if self._count + n <= self.limit:
                self._count += n
                return True
            return False

    def retry_after(self, n: int = 1) -> float:
        with self._lock:
            self._roll()
            if self._count + n <= self.limit:
                return 0.0
            next_start = (self._window_index + 1) * self.window
            return max(0.0, next_start - self._clock())

    @property
    def remaining(self) -> int:
        with self._lock:
            self._roll()
            return self.limit - self._count


class SlidingWindowLog:
    """At most `limit` permits in any interval of `window` seconds, by remembering each grant's time."""

    def __init__(self, limit: int, window: float, clock: Clock = time.monotonic):
        _check_positive("limit", limit)
        _check_positive("window", window)
        self.limit = limit
        self.window = window
        self._clock = clock
        self._grants: deque[float] = deque()
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        # A grant at time t stops counting once now - t >= window.
        while self._grants and now - self._grants[0] >= self.window:
            self._grants.popleft()

    def try_acquire(self, n: int = 1) -> bool:
        if n > self.limit:
            raise ValueError(f"cannot acquire {n} permits with a limit of {self.limit}")
        with self._lock:
            now = self._clock()
            self._expire(now)
            if len(self._grants) + n <= self.limit:
                self._grants.extend([now] * n)
                return True
            return False

    def retry_after(self, n: int = 1) -> float:
        with self._lock:
            now = self._clock()
            self._expire(now)
            excess = len(self._grants) + n - self.limit
            if excess <= 0:
                return 0.0
            # The `excess` oldest grants have to expire first.
            return max(0.0, self._grants[excess - 1] + self.window - now)

    @property
    def in_window(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._grants)


class KeyedLimiter:
    """One limiter per key (user id, IP, API token), created on first use by `factory`.

    Limiters idle for longer than `idle_ttl` seconds are dropped by `prune()` so the registry does not grow
    without bound; a dropped key simply starts fresh next time.
    """

    def __init__(self, factory: Callable[[], object], idle_ttl: float = 3600.0,
                 clock: Clock = time.monotonic):
        _check_positive("idle_ttl", idle_ttl)
        self._factory = factory
        self._idle_ttl = idle_ttl
        self._clock = clock
        self._limiters: dict[str, object] = {}
        self._last_used: dict[str, float] = {}
        self._lock = threading.Lock()

    def _get(self, key: str):
        with self._lock:
            limiter = self._limiters.get(key)
            if limiter is None:
                limiter = self._limiters[key] = self._factory()
            self._last_used[key] = self._clock()
            return limiter

    def try_acquire(self, key: str, n: int = 1) -> bool:
        return self._get(key).try_acquire(n)

    def retry_after(self, key: str, n: int = 1) -> float:
        return self._get(key).retry_after(n)

    def acquire_or_raise(self, key: str, n: int = 1) -> None:
        limiter = self._get(key)
        if not limiter.try_acquire(n):
            raise RateLimitExceeded(limiter.retry_after(n), key=key)

    def prune(self) -> int:
        """Forget limiters idle for more than `idle_ttl`; returns how many were dropped."""
        now = self._clock()
        with self._lock:
            stale = [k for k, used in self._last_used.items() if now - used > self._idle_ttl]
            for key in stale:
                del self._limiters[key]
                del self._last_used[key]
            return len(stale)

    def __len__(self) -> int:
        return len(self._limiters)

    def __contains__(self, key: str) -> bool:
        return key in self._limiters


def rate_limited(limiter, key_func: Callable[..., str] | None = None, cost: int = 1):
    """Decorator: raise RateLimitExceeded instead of calling the function when over the limit.

    With a KeyedLimiter, `key_func(*args, **kwargs)` picks the key (for example the user id argument).
    """

    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if isinstance(limiter, KeyedLimiter):
                if key_func is None:
                    raise TypeError("a KeyedLimiter needs key_func to pick the key")
                limiter.acquire_or_raise(key_func(*args, **kwargs), cost)
            elif not limiter.try_acquire(cost):
                raise RateLimitExceeded(limiter.retry_after(cost))
            return func(*args, **kwargs)

        return wrapper

    return decorate


def wait_and_acquire(limiter, n: int = 1, sleep: Callable[[float], None] = time.sleep,
                     max_wait: float | None = None) -> float:
    """Block (via `sleep`) until `n` permits are granted; returns the total time slept.

    Raises RateLimitExceeded if that would take longer than `max_wait` seconds.
    """
    waited = 0.0
    while not limiter.try_acquire(n):
        delay = limiter.retry_after(n)
        if max_wait is not None and waited + delay > max_wait:
            raise RateLimitExceeded(delay)
        # Never spin with a zero delay: clocks with coarse resolution can report 0 before the permit exists.
        delay = max(delay, 1e-3)
        sleep(delay)
        waited += delay
    return waited
