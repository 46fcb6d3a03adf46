from retrykit.backoff import constant, exponential, jittered, linear
from retrykit.retry import RetryError, Retrying, RetryState, retry

__all__ = ["RetryError", "RetryState", "Retrying", "constant", "exponential", "jittered", "linear", "retry"]
