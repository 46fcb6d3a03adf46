import datetime as dt
import io

import pytest

from evstore import (
    ANY,
    NO_STREAM,
    STREAM_EXISTS,
    EventData,
    EventStore,
    EventStoreError,
    InMemoryBackend,
    JsonlBackend,
    StreamDeleted,
    StreamNotFound,
    WrongExpectedVersion,
)
from evstore import store as es


class Clock:
    def __init__(self):
        self.now = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)

    def __call__(self):
        return self.now


def ev(kind="Happened", **data):
    return EventData(kind, data)


def test_append_and_read_versions_and_positions():
    store = EventStore()
    assert store.append("order-1", [ev(n=1), ev(n=2)], NO_STREAM) == 2
    assert store.append("order-2", [ev(n=3)]) == 1
    assert store.append("order-1", [ev(n=4)], 2) == 3
    events = store.read_stream("order-1")
    assert [(e.version, e.position, e.data["n"]) for e in events] == [(1, 1, 1), (2, 2, 2), (3, 4, 4)]
    assert [e.data["n"] for e in store.read_stream("order-1", 2)] == [2, 4]
    assert [e.version for e in store.read_stream("order-1", -1, 2, backwards=True)] == [3, 2]
    assert [e.stream_id for e in store.read_all(2, 2)] == ["order-1", "order-2"]


def test_expected_versions():
    store = EventStore()
    with pytest.raises(WrongExpectedVersion):
        store.append("s-1", [ev()], STREAM_EXISTS)
    store.append("s-1", [ev()], NO_STREAM)
    with pytest.raises(WrongExpectedVersion) as info:
        store.append("s-1", [ev()], 0)
    assert info.value.actual == 1
    store.append("s-1", [ev()], ANY)


def test_idempotent_retry():
    store = EventStore()
    batch = [ev(n=1), ev(n=2)]
    assert store.append("s-1", batch, NO_STREAM) == 2
    assert store.append("s-1", batch, NO_STREAM) == 2  # the retry of a write that went through
    assert store.position == 2
    with pytest.raises(EventStoreError):
        store.append("s-1", [batch[0], ev(n=3)])


def test_bad_input():
    store = EventStore()
    for bad in ("", "$system", "has space"):
        with pytest.raises(EventStoreError):
            store.append(bad, [ev()])
    with pytest.raises(EventStoreError):
        store.append("s-1", [])
    with pytest.raises(StreamNotFound):
        store.read_stream("nope")


def test_payloads_round_trip_rich_types():
    from decimal import Decimal

    store = EventStore()
    store.append("s-1", [ev(price=Decimal("9.99"), when=dt.date(2024, 2, 29), tags={"b", "a"})])
    data = store.read_stream("s-1")[0].data
    assert data == {"price": Decimal("9.99"), "when": dt.date(2024, 2, 29), "tags": ["a", "b"]}


def test_max_count_max_age_and_truncate():
    clock = Clock()
    store = EventStore(clock=clock)
    for n in range(5):
        store.append("s-1", [ev(n=n)])
        clock.now += dt.timedelta(hours=1)
    store.set_stream_metadata("s-1", max_count=3)
    assert [e.data["n"] for e in store.read_stream("s-1")] == [2, 3, 4]
    store.set_stream_metadata("s-1", max_age=dt.timedelta(hours=2, minutes=30))
    assert [e.data["n"] for e in store.read_stream("s-1")] == [3, 4]
    store.set_stream_metadata("s-1")
    store.truncate("s-1", 5)
    assert [e.version for e in store.read_stream("s-1")] == [5]


def test_soft_and_hard_delete():
    store = EventStore()
    store.append("s-1", [ev(), ev()])
    store.delete_stream("s-1")
    with pytest.raises(StreamDeleted):
        store.read_stream("s-1")
    assert store.streams() == []
    assert store.append("s-1", [ev(n=3)], 2) == 3  # writing again revives the stream
    assert [e.version for e in store.read_stream("s-1")] == [3]
    store.delete_stream("s-1", hard=True)
    with pytest.raises(StreamDeleted):
        store.append("s-1", [ev()])


def test_jsonl_backend_survives_restart_and_torn_write(tmp_path):
    path = tmp_path / "log.jsonl"
    store = EventStore(JsonlBackend(path, fsync=False))
    store.append("s-1", [ev(n=1), ev(n=2)])
    store.set_stream_metadata("s-1", max_count=10)
    with path.open("a") as handle:
        handle.write('{"stream_id": "s-1", "vers')  # a crash in the middle of a write
    backend = JsonlBackend(path, fsync=False)
    reopened = EventStore(backend)
    assert backend.torn_tail and reopened.position == 2
    assert reopened.get_stream_metadata("s-1").max_count == 10
    assert backend.repair()
    reopened.append("s-1", [ev(n=3)], 2)
    assert [e.data["n"] for e in EventStore(JsonlBackend(path, fsync=False)).read_stream("s-1")] == [1, 2, 3]


def test_corrupt_log_is_reported(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text("not json\n")
    with pytest.raises(es.CorruptLog):
        EventStore(JsonlBackend(path))


def test_export_import_is_idempotent():
    source = EventStore()
    source.append("a-1", [ev(n=1)])
    source.append("b-1", [ev(n=2)])
    source.append("a-1", [ev(n=3)])
    out = io.StringIO()
    assert es.export_events(source, out, category="a") == 2
    target = EventStore()
    lines = out.getvalue().splitlines()
    assert es.import_events(target, lines) == 2
    assert es.import_events(target, lines) == 0
    assert [e.data["n"] for e in target.read_stream("a-1")] == [1, 3]


def test_migrate_renames_and_drops():
    source = EventStore()
    source.append("s-1", [ev("Old", n=1), ev("Obsolete"), ev("Keep", n=2)])
    target = EventStore()

    def transform(event):
        if event.type == "Obsolete":
            return None
        return es.rename_types({"Old": "New"})(event)

    assert es.migrate(source, target, transform) == {"kept": 2, "dropped": 1, "written": 2}
    assert [e.type for e in target.read_stream("s-1")] == ["New", "Keep"]


def test_scavenge_compacts_the_log():
    store = EventStore()
    store.append("keep-1", [ev(n=1), ev(n=2), ev(n=3)])
    store.append("gone-1", [ev(n=4)])
    store.truncate("keep-1", 3)
    store.delete_stream("gone-1", hard=True)
    backend = InMemoryBackend()
    assert es.scavenge(store, backend) == {"kept": 1, "dropped": 3}
    compacted = es.open_compacted(backend)
    assert [(e.version, e.position) for e in compacted.read_stream("keep-1")] == [(3, 1)]
    assert compacted.append("keep-1", [ev(n=5)], 3) == 4
    with pytest.raises(StreamDeleted):
        compacted.append("gone-1", [ev()])
