from minimetrics import CONTENT_TYPE, Counter, Gauge, Histogram, render


def test_text_format(registry):
    c = Counter("http_requests_total", "Requests served.", labels=("path",), registry=registry)
    c.labels(path='/say "hi"\n').inc(3)
    Gauge("up", "1 if the service is up.\nAlways.", registry=registry).set(1)
    h = Histogram("size_bytes", "Sizes.", registry=registry, buckets=[10, 100])
    h.observe(5)
    h.observe(50)
    assert render(registry).splitlines() == [
        "# HELP http_requests Requests served.",
        "# TYPE http_requests counter",
        'http_requests_total{path="/say \\"hi\\"\\n"} 3.0',
        "# HELP size_bytes Sizes.",
        "# TYPE size_bytes histogram",
        'size_bytes_bucket{le="10.0"} 1.0',
        'size_bytes_bucket{le="100.0"} 2.0',
        'size_bytes_bucket{le="+Inf"} 2.0',
        "size_bytes_sum 55.0",
        "size_bytes_count 2.0",
        "# HELP up 1 if the service is up.\\nAlways.",
        "# TYPE up gauge",
        "up 1.0",
    ]
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")


def test_default_bucket_labels(registry):
    Histogram("latency_seconds", "Latency.", registry=registry).observe(0.07)
    lines = render(registry).splitlines()
    assert 'latency_seconds_bucket{le="0.005"} 0.0' in lines
    assert 'latency_seconds_bucket{le="0.1"} 1.0' in lines
    assert 'latency_seconds_bucket{le="10.0"} 1.0' in lines
