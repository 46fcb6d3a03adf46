"""Call a function until it succeeds, a retry limit is hit or a deadline passes.

    retrying = Retrying(max_attempts=5, wait=exponential(0.5), retry_on=(ConnectionError,))
    body = retrying.call(fetch, url)

`sleep` and `clock` are injectable so that callers (and tests) control time.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from retrykit.backoff import Wait, exponential

T = TypeVar("T")


class RetryError(Exception):
    """Raised when retrying gives up; carries the last exception (or the last rejected result)."""

    def __init__(self, attempts: int, last_exception: BaseException | None, last_result: Any = None):
        self.attempts = attempts
        self.last_exception = last_exception
        self.last_result = last_result
        cause = repr(last_exception) if last_exception is not None else f"result {last_result!r}"
        super().__init__(f"gave up after {attempts} attempt(s): {cause}")


@dataclass(frozen=True)
class RetryState:
    """What the `on_retry` callback sees before each pause."""

    attempt: int  # 1-based number of the attempt that just failed
    delay: float  # seconds until the next attempt
    elapsed: float  # seconds since the first attempt started
    exception: BaseException | None
    result: Any = None


class Retrying:
    """A retry policy; `call` runs a function under it. Reusable and thread-safe (no per-call state kept)."""

    def __init__(
        self,
        max_attempts: int = 3,
        wait: Wait | None = None,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
        retry_if_result: Callable[[Any], bool] | None = None,
        deadline: float | None = None,
        on_retry: Callable[[RetryState], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        reraise: bool = False,
    ):
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if deadline is not None and deadline <= 0:
            raise ValueError("deadline must be positive")
        self.max_attempts = max_attempts
        self.wait = wait or exponential()
        self.retry_on = retry_on
        self.retry_if_result = retry_if_result
        self.deadline = deadline
        self.on_retry = on_retry
        self.sleep = sleep
        self.clock = clock
        self.reraise = reraise

    def _give_up(self, attempt: int, elapsed: float, delay: float) -> bool:
        """True when no further attempt is allowed: the limit is reached or the pause would pass the deadline."""
        if attempt > self.max_attempts:
            return True
        return self.deadline is not None and elapsed + delay > self.deadline

    def _fail(self, attempt: int, exc: BaseException | None, result: Any) -> RetryError | BaseException:
        if exc is not None and self.reraise:
            return exc
        return RetryError(attempt, exc, result)

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        started = self.clock()
        attempt = 0
        while True:
            attempt += 1
            exc: BaseException | None = None
            result: Any = None
            try:
                result = fn(*args, **kwargs)
            except self.retry_on as caught:
                exc = caught
            else:
                if self.retry_if_result is None or not self.retry_if_result(result):
                    return result
            elapsed = self.clock() - started
            delay = self.wait(attempt)
            if self._give_up(attempt, elapsed, delay):
                raise self._fail(attempt, exc, result) from exc
            if self.on_retry is not None:
                self.on_retry(RetryState(attempt, delay, elapsed, exc, result))
            self.sleep(delay)

    def __call__(self, fn: Callable[..., T]) -> Callable[..., T]:
        """Use a policy as a decorator."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            return self.call(fn, *args, **kwargs)

        wrapper.retrying = self  # type: ignore[attr-defined]
        return wrapper


def retry(**policy: Any) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator form: `@retry(max_attempts=5, retry_on=(TimeoutError,))`."""
    return Retrying(**policy)
