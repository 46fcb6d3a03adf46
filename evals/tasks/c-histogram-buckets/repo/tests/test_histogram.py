import math

import pytest

from minimetrics import DEFAULT_BUCKETS, Histogram, MetricError, exponential_buckets, linear_buckets


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_default_buckets_are_seconds():
    assert DEFAULT_BUCKETS[0] == 0.005 and DEFAULT_BUCKETS[-1] == 10.0
    assert list(DEFAULT_BUCKETS) == sorted(DEFAULT_BUCKETS)


def test_request_durations_spread_over_the_default_buckets(registry):
    latency = Histogram("request_seconds", "Latency.", registry=registry)
    for seconds in (0.003, 0.02, 0.2, 0.2, 0.8, 3.0, 12.0):
        latency.observe(seconds)
    cumulative = dict(latency.buckets())
    assert cumulative[0.005] == 1
    assert cumulative[0.025] == 2
    assert cumulative[0.25] == 4
    assert cumulative[1.0] == 5
    assert cumulative[5.0] == 6
    assert cumulative[math.inf] == 7
    assert latency.count == 7 and latency.sum == pytest.approx(16.223)


def test_timer_observes_seconds(registry):
    clock = FakeClock()
    latency = Histogram("job_seconds", "Job time.", registry=registry, clock=clock)
    with latency.time():
        clock.now += 0.3
    assert latency.sum == pytest.approx(0.3)
    assert dict(latency.buckets())[0.25] == 0 and dict(latency.buckets())[0.5] == 1


def test_custom_buckets_get_an_inf_bucket(registry):
    h = Histogram("payload_bytes", "Sizes.", registry=registry, buckets=[100, 1000])
    for size in (50, 500, 5000):
        h.observe(size)
    assert h.buckets() == [(100.0, 1), (1000.0, 2), (math.inf, 3)]


@pytest.mark.parametrize("buckets", [[1.0, 0.5, 0.1], [0.1, 0.1, 1.0], [], [0.1, float("nan")]])
def test_bad_buckets_are_rejected(registry, buckets):
    with pytest.raises(MetricError):
        Histogram("bad_buckets", "x", registry=registry, buckets=buckets)


def test_bucket_helpers():
    assert linear_buckets(1, 2, 3) == (1, 3, 5)
    assert exponential_buckets(0.01, 10, 3) == pytest.approx((0.01, 0.1, 1.0))
    with pytest.raises(MetricError):
        exponential_buckets(0, 2, 3)


def test_labelled_histogram(registry):
    h = Histogram("db_query_seconds", "Queries.", labels=("table",), registry=registry, buckets=[0.1, 1])
    h.labels(table="users").observe(0.05)
    h.labels(table="orders").observe(2)
    assert registry.sample_value("db_query_seconds_count", {"table": "orders"}) == 1
    assert registry.sample_value("db_query_seconds_bucket", {"table": "users", "le": "0.1"}) == 1
    with pytest.raises(MetricError):
        h.observe(float("nan"))
