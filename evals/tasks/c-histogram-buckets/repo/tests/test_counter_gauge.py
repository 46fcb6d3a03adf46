import pytest

from minimetrics import Counter, Gauge, MetricError


def test_counter_counts_and_gets_its_total_suffix(registry):
    c = Counter("jobs_done_total", "Jobs done.", registry=registry)
    c.inc()
    c.inc(2.5)
    assert c.name == "jobs_done" and c.value == 3.5
    assert registry.sample_value("jobs_done_total") == 3.5
    with pytest.raises(MetricError):
        c.inc(-1)


def test_labels_by_name_and_position(registry):
    c = Counter("http_requests", "Requests.", labels=("method", "status"), registry=registry)
    c.labels(method="GET", status="200").inc()
    c.labels("GET", 200).inc()
    c.labels("POST", "500").inc()
    assert registry.sample_value("http_requests_total", {"method": "GET", "status": "200"}) == 2
    with pytest.raises(MetricError):
        c.labels(method="GET")
    with pytest.raises(MetricError):
        c.inc()


def test_count_exceptions(registry):
    errors = Counter("errors", "Errors.", registry=registry)

    @errors.count_exceptions(KeyError)
    def lookup(d, k):
        return d[k]

    assert lookup({"a": 1}, "a") == 1
    with pytest.raises(KeyError):
        lookup({}, "b")
    assert errors.value == 1


def test_gauge(registry):
    g = Gauge("queue_depth", "Items waiting.", registry=registry)
    g.set(5)
    g.dec(2)
    with g.track_in_progress():
        assert g.value == 4
    assert g.value == 3
    items = [1, 2]
    g.set_function(lambda: len(items))
    assert registry.sample_value("queue_depth") == 2


@pytest.mark.parametrize("name,labels", [("bad-name", ()), ("ok", ("le",)), ("ok", ("__x",)), ("ok", ("a", "a"))])
def test_invalid_names(registry, name, labels):
    with pytest.raises(MetricError):
        Counter(name, "x", labels=labels, registry=registry)


def test_duplicate_registration(registry):
    Gauge("temperature", "x", registry=registry)
    with pytest.raises(MetricError):
        Gauge("temperature", "y", registry=registry)
    Gauge("temperature", "not registered anywhere", registry=None)
