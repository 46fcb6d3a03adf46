import pytest

from minimetrics import MetricError, render
from minimetrics.metrics import Enum, Info, Summary


def test_summary_counts_and_sums(registry):
    s = Summary("batch_size", "Items per batch.", registry=registry)
    for n in (3, 5, 8):
        s.observe(n)
    assert (s.count, s.sum) == (3, 16)
    assert render(registry).splitlines()[-2:] == ["batch_size_count 3.0", "batch_size_sum 16.0"]


def test_info(registry):
    Info("build", "Build facts.", registry=registry).info({"version": "1.4.2", "commit": "abc123"})
    assert 'build_info{commit="abc123",version="1.4.2"} 1.0' in render(registry).splitlines()
    with pytest.raises(MetricError):
        Info("other", "x", registry=registry).info({"bad-key": "1"})


def test_enum(registry):
    e = Enum("worker_state", "Worker state.", states=["idle", "busy", "draining"], registry=registry)
    e.state("busy")
    lines = render(registry).splitlines()
    assert 'worker_state{worker_state="busy"} 1.0' in lines
    assert 'worker_state{worker_state="idle"} 0.0' in lines
    with pytest.raises(MetricError):
        e.state("sleeping")
    with pytest.raises(MetricError):
        Enum("dup_states", "x", states=["a", "a"], registry=registry)
