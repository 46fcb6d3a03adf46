from minimetrics.exposition import CONTENT_TYPE, render
from minimetrics.metrics import (
    DEFAULT_BUCKETS,
    REGISTRY,
    Counter,
    Gauge,
    Histogram,
    MetricError,
    Registry,
    exponential_buckets,
    linear_buckets,
)

__all__ = ["CONTENT_TYPE", "DEFAULT_BUCKETS", "REGISTRY", "Counter", "Gauge", "Histogram", "MetricError",
           "Registry", "exponential_buckets", "linear_buckets", "render"]
