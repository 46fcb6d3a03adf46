from .limiters import (
    FixedWindow,
    KeyedLimiter,
    ManualClock,
    RateLimitExceeded,
    SlidingWindowLog,
    TokenBucket,
    rate_limited,
)

__all__ = [
    "FixedWindow",
    "KeyedLimiter",
    "ManualClock",
    "RateLimitExceeded",
    "SlidingWindowLog",
    "TokenBucket",
    "rate_limited",
]
