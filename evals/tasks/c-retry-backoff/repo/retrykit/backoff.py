"""Wait strategies: callables that map an attempt number to the seconds to wait before the next try.

Attempt numbers are 1-based: `wait(1)` is the pause after the first failed attempt.
"""

from __future__ import annotations

import random
from typing import Callable

Wait = Callable[[int], float]


def _check_attempt(attempt: int) -> None:
    if attempt < 1:
        raise ValueError(f"attempt numbers start at 1, got {attempt}")


def constant(delay: float) -> Wait:
    """The same pause after every attempt."""
    if delay < 0:
        raise ValueError("delay cannot be negative")

    def wait(attempt: int) -> float:
        _check_attempt(attempt)
        return float(delay)

    return wait


def linear(start: float, step: float, max_delay: float | None = None) -> Wait:
    """start, start + step, start + 2*step, ... capped at `max_delay`."""
    if start < 0 or step < 0:
        raise ValueError("start and step cannot be negative")

    def wait(attempt: int) -> float:
        _check_attempt(attempt)
        delay = start + step * attempt
        return delay if max_delay is None else min(delay, max_delay)

    return wait


def exponential(base: float = 1.0, factor: float = 2.0, max_delay: float | None = None) -> Wait:
    """base, base*factor, base*factor**2, ... capped at `max_delay`: 1, 2, 4, 8 s by default."""
    if base <= 0 or factor < 1:
        raise ValueError("base must be positive and factor at least 1")

    def wait(attempt: int) -> float:
        _check_attempt(attempt)
        delay = base * factor ** attempt
        return delay if max_delay is None else min(delay, max_delay)

    return wait


def jittered(wait: Wait, spread: float = 0.5, rng: random.Random | None = None) -> Wait:
    """`wait`'s delay scaled by a random factor in [1 - spread, 1 + spread] (spreads out retry storms)."""
    if not 0 <= spread <= 1:
        raise ValueError("spread must be between 0 and 1")
    rng = rng or random.Random()

    def jittered_wait(attempt: int) -> float:
        return wait(attempt) * rng.uniform(1 - spread, 1 + spread)

    return jittered_wait
