"""An embeddable event store for event-sourced applications.

Concepts
--------
*Streams* are ordered lists of events, one per aggregate (``order-42``), identified by a string.
Each event in a stream has a *version*: the first event is version 1, the n-th is version n, so a
stream's version is also its length. Every event also gets a *global position* in the store-wide log
(starting at 1), which is what subscriptions and projections follow.

Writers use *optimistic concurrency*: `EventStore.append` takes the version the writer last saw and
fails with `WrongExpectedVersion` when someone else has appended in between. Appends are idempotent
per event id: retrying an append whose events were already stored is a no-op.

On top of the log:

* `Aggregate` / `Repository`: rebuild domain objects from their streams, with optional snapshots
  every N events so long streams load quickly;
* `Subscription`: catch-up subscriptions that replay history, then follow live appends, with
  checkpoints so a restarted consumer continues where it stopped;
* `Projection` / `ProjectionRunner`: read models built from the log, with retries and a dead-letter
  list for events that keep failing.

Storage is pluggable (`InMemoryBackend`, `JsonlBackend` for a single append-only file).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import decimal
import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

# --- errors --------------------------------------------------------------------------------------


class EventStoreError(Exception):
    """Base class of every error raised by this module."""


class WrongExpectedVersion(EventStoreError):
    """Optimistic concurrency check failed: the stream moved on since the writer read it."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        super().__init__(f"stream {stream_id!r}: expected version {describe_expected(expected)}, actual {actual}")
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual


class StreamNotFound(EventStoreError):
    def __init__(self, stream_id: str) -> None:
        super().__init__(f"stream {stream_id!r} does not exist")
        self.stream_id = stream_id


class StreamDeleted(EventStoreError):
    def __init__(self, stream_id: str) -> None:
        super().__init__(f"stream {stream_id!r} has been deleted")
        self.stream_id = stream_id


class SerializationError(EventStoreError):
    pass


class UnknownEventType(SerializationError):
    pass


class ProjectionError(EventStoreError):
    pass


class CorruptLog(EventStoreError):
    pass


# --- expected versions ---------------------------------------------------------------------------

ANY = -2
"""Append whatever the stream's version is."""
NO_STREAM = -1
"""Append only if the stream does not exist yet (or was never written)."""
STREAM_EXISTS = -4
"""Append only if the stream already has events."""


def describe_expected(expected: int) -> str:
    return {ANY: "any", NO_STREAM: "no stream", STREAM_EXISTS: "stream exists"}.get(expected, str(expected))


def check_expected_version(stream_id: str, expected: int, actual: int) -> None:
    """Raise WrongExpectedVersion unless `actual` (0 for a new stream) satisfies `expected`."""
    if expected == ANY:
        return
    if expected == NO_STREAM:
        ok = actual == 0
    elif expected == STREAM_EXISTS:
        ok = actual > 0
    elif expected >= 0:
        ok = actual == expected
    else:
        raise EventStoreError(f"invalid expected version {expected}")
    if not ok:
        raise WrongExpectedVersion(stream_id, expected, actual)


_STREAM_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,199}$")


def validate_stream_id(stream_id: str) -> str:
    if not isinstance(stream_id, str) or not _STREAM_ID_RE.match(stream_id):
        raise EventStoreError(f"invalid stream id {stream_id!r}")
    if stream_id.startswith("$"):
        raise EventStoreError("stream ids starting with '$' are reserved")
    return stream_id


def stream_category(stream_id: str) -> str:
    """'order-42' -> 'order'; a stream without a dash is its own category."""
    return stream_id.split("-", 1)[0]


# --- events --------------------------------------------------------------------------------------


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class EventData:
    """An event to append. `event_id` makes appends idempotent; one is generated when omitted."""

    type: str
    data: Mapping[str, Any]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    event_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    def __post_init__(self) -> None:
        if not self.type or not isinstance(self.type, str):
            raise EventStoreError("an event needs a non-empty type")
        if not isinstance(self.data, Mapping):
            raise EventStoreError(f"event data must be a mapping, got {type(self.data).__name__}")


@dataclass(frozen=True)
class RecordedEvent:
    """An event as stored."""

    stream_id: str
    version: int
    position: int
    type: str
    data: Mapping[str, Any]
    metadata: Mapping[str, Any]
    event_id: str
    recorded_at: dt.datetime

    def to_record(self) -> dict[str, Any]:
        return {
            "stream_id": self.stream_id,
            "version": self.version,
            "position": self.position,
            "type": self.type,
            "data": self.data,
            "metadata": self.metadata,
            "event_id": self.event_id,
            "recorded_at": self.recorded_at.isoformat(),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> RecordedEvent:
        try:
            return cls(
                stream_id=record["stream_id"],
                version=int(record["version"]),
                position=int(record["position"]),
                type=record["type"],
                data=record["data"],
                metadata=record.get("metadata", {}),
                event_id=record["event_id"],
                recorded_at=dt.datetime.fromisoformat(record["recorded_at"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptLog(f"bad event record {record!r}: {exc}") from None

    @property
    def correlation_id(self) -> str | None:
        return self.metadata.get("correlation_id")

    @property
    def causation_id(self) -> str | None:
        return self.metadata.get("causation_id")


def caused_by(event: RecordedEvent, new_type: str, data: Mapping[str, Any], **metadata: Any) -> EventData:
    """A new event caused by `event`, carrying its correlation id forward (for tracing workflows)."""
    meta = {
        "correlation_id": event.correlation_id or event.event_id,
        "causation_id": event.event_id,
        **metadata,
    }
    return EventData(new_type, data, meta)


# --- serialization -------------------------------------------------------------------------------


class JsonEncoder(json.JSONEncoder):
    """JSON with the types event payloads commonly hold: datetimes, dates, Decimals, UUIDs, dataclasses."""

    def default(self, o: Any) -> Any:
        if isinstance(o, (dt.datetime, dt.date, dt.time)):
            return {"$dt": type(o).__name__, "v": o.isoformat()}
        if isinstance(o, decimal.Decimal):
            return {"$decimal": str(o)}
        if isinstance(o, uuid.UUID):
            return {"$uuid": str(o)}
        if dataclasses.is_dataclass(o) and not isinstance(o, type):
            return dataclasses.asdict(o)
        if isinstance(o, (set, frozenset)):
            return sorted(o)
        return super().default(o)


def _decode_hook(obj: dict[str, Any]) -> Any:
    if "$dt" in obj and "v" in obj:
        kind = {"datetime": dt.datetime, "date": dt.date, "time": dt.time}[obj["$dt"]]
        return kind.fromisoformat(obj["v"])
    if "$decimal" in obj:
        return decimal.Decimal(obj["$decimal"])
    if "$uuid" in obj:
        return uuid.UUID(obj["$uuid"])
    return obj


def dumps(value: Any) -> str:
    try:
        return json.dumps(value, cls=JsonEncoder, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise SerializationError(f"cannot serialise {value!r}: {exc}") from None


def loads(text: str) -> Any:
    try:
        return json.loads(text, object_hook=_decode_hook)
    except (json.JSONDecodeError, KeyError, ValueError) as exc:
        raise SerializationError(f"cannot parse {text[:80]!r}: {exc}") from None


Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


class EventTypeRegistry:
    """Maps event type names to Python classes, with upcasters for old payload schemas.

    Payloads carry their schema version in metadata["schema"] (default 1). When reading, upcasters
    registered for (type, version) run in sequence until the payload reaches the current version.
    """

    def __init__(self) -> None:
        self._classes: dict[str, type] = {}
        self._names: dict[type, str] = {}
        self._versions: dict[str, int] = {}
        self._upcasters: dict[tuple[str, int], Upcaster] = {}

    def register(self, cls: type, name: str | None = None, version: int = 1) -> type:
        if not dataclasses.is_dataclass(cls):
            raise SerializationError(f"{cls.__name__} must be a dataclass")
        name = name or cls.__name__
        if name in self._classes and self._classes[name] is not cls:
            raise SerializationError(f"event type {name!r} is already registered")
        self._classes[name] = cls
        self._names[cls] = name
        self._versions[name] = version
        return cls

    def event(self, name: str | None = None, version: int = 1) -> Callable[[type], type]:
        """Class decorator form of `register`."""
        return lambda cls: self.register(cls, name, version)

    def upcaster(self, name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
        """Register a function turning a version-`from_version` payload into version from_version + 1."""
        def decorate(func: Upcaster) -> Upcaster:
            self._upcasters[(name, from_version)] = func
            return func
        return decorate

    def name_of(self, event: Any) -> str:
        try:
            return self._names[type(event)]
        except KeyError:
            raise UnknownEventType(f"{type(event).__name__} is not a registered event type") from None

    def to_event_data(self, event: Any, metadata: Mapping[str, Any] | None = None, event_id: str | None = None) -> EventData:
        name = self.name_of(event)
        meta = {**(metadata or {}), "schema": self._versions[name]}
        payload = loads(dumps(dataclasses.asdict(event)))
        kwargs = {"event_id": event_id} if event_id else {}
        return EventData(name, payload, meta, **kwargs)

    def upcast(self, event_type: str, data: Mapping[str, Any], schema: int) -> dict[str, Any]:
        payload = dict(data)
        current = self._versions.get(event_type, schema)
        while schema < current:
            step = self._upcasters.get((event_type, schema))
            if step is None:
                raise SerializationError(f"no upcaster for {event_type} v{schema} -> v{schema + 1}")
            payload = step(payload)
            schema += 1
        return payload

    def from_recorded(self, recorded: RecordedEvent) -> Any:
        cls = self._classes.get(recorded.type)
        if cls is None:
            raise UnknownEventType(f"unknown event type {recorded.type!r}")
        payload = self.upcast(recorded.type, recorded.data, int(recorded.metadata.get("schema", 1)))
        names = {f.name for f in dataclasses.fields(cls)}
        try:
            return cls(**{k: v for k, v in payload.items() if k in names})
        except TypeError as exc:
            raise SerializationError(f"cannot build {cls.__name__} from {payload!r}: {exc}") from None

    def __contains__(self, name: str) -> bool:
        return name in self._classes


# --- storage backends ----------------------------------------------------------------------------


class Backend(Protocol):
    """Where recorded events live. The store does all checking; backends only keep the log."""

    def load(self) -> Iterator[RecordedEvent]: ...
    def write(self, events: list[RecordedEvent]) -> None: ...
    def write_meta(self, stream_id: str, meta: Mapping[str, Any]) -> None: ...
    def load_meta(self) -> dict[str, dict[str, Any]]: ...
    def close(self) -> None: ...


class InMemoryBackend:
    """Keeps nothing outside the process; useful in tests and for caches rebuilt at start-up."""

    def __init__(self) -> None:
        self.events: list[RecordedEvent] = []
        self.meta: dict[str, dict[str, Any]] = {}

    def load(self) -> Iterator[RecordedEvent]:
        return iter(list(self.events))

    def write(self, events: list[RecordedEvent]) -> None:
        self.events.extend(events)

    def write_meta(self, stream_id: str, meta: Mapping[str, Any]) -> None:
        self.meta[stream_id] = dict(meta)

    def load_meta(self) -> dict[str, dict[str, Any]]:
        return copy.deepcopy(self.meta)

    def close(self) -> None:
        pass


class JsonlBackend:
    """One append-only JSON-lines file for events plus a small JSON file of stream metadata.

    Each append batch is written with a single write() and fsync()ed, so after a crash the file holds
    whole batches, except perhaps a torn last line, which `load` drops (and `repair` truncates).
    """

    def __init__(self, path: str | Path, *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.meta_path = self.path.with_suffix(self.path.suffix + ".meta.json")
        self.fsync = fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch(exist_ok=True)
        self.torn_tail = False

    def load(self) -> Iterator[RecordedEvent]:
        with self.path.open("r", encoding="utf-8") as handle:
            lines = handle.read().split("\n")
        complete, tail = lines[:-1], lines[-1]
        if tail.strip():
            self.torn_tail = True  # the last line has no newline: a write that did not finish
        for lineno, line in enumerate(complete, 1):
            if not line.strip():
                continue
            try:
                record = loads(line)
            except SerializationError as exc:
                raise CorruptLog(f"{self.path}:{lineno}: {exc}") from None
            yield RecordedEvent.from_record(record)

    def repair(self) -> bool:
        """Cut a torn last line off the file; True if something was cut."""
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return False
        keep = data.rfind(b"\n") + 1
        with self.path.open("r+b") as handle:
            handle.truncate(keep)
        self.torn_tail = False
        return True

    def write(self, events: list[RecordedEvent]) -> None:
        payload = "".join(dumps(event.to_record()) + "\n" for event in events)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(payload)
            handle.flush()
            if self.fsync:
                os.fsync(handle.fileno())

    def write_meta(self, stream_id: str, meta: Mapping[str, Any]) -> None:
        all_meta = self.load_meta()
        all_meta[stream_id] = dict(meta)
        tmp = self.meta_path.with_suffix(".tmp")
        tmp.write_text(dumps(all_meta), encoding="utf-8")
        os.replace(tmp, self.meta_path)  # atomic: readers see the old or the new file, never half

    def load_meta(self) -> dict[str, dict[str, Any]]:
        if not self.meta_path.exists():
            return {}
        return loads(self.meta_path.read_text(encoding="utf-8"))

    def close(self) -> None:
        pass


# --- the store -----------------------------------------------------------------------------------


@dataclass
class StreamMetadata:
    """Per-stream settings. Events hidden by these rules stay in the log; they are just not read."""

    max_count: int | None = None
    """Keep only the newest `max_count` events visible."""
    max_age: dt.timedelta | None = None
    """Hide events older than this."""
    truncate_before: int | None = None
    """Hide versions below this (set by soft deletes and by `truncate`)."""
    deleted: bool = False
    tombstoned: bool = False
    custom: dict[str, Any] = field(default_factory=dict)

    def to_record(self) -> dict[str, Any]:
        return {
            "max_count": self.max_count,
            "max_age": self.max_age.total_seconds() if self.max_age is not None else None,
            "truncate_before": self.truncate_before,
            "deleted": self.deleted,
            "tombstoned": self.tombstoned,
            "custom": self.custom,
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> StreamMetadata:
        age = record.get("max_age")
        return cls(
            max_count=record.get("max_count"),
            max_age=dt.timedelta(seconds=age) if age is not None else None,
            truncate_before=record.get("truncate_before"),
            deleted=bool(record.get("deleted", False)),
            tombstoned=bool(record.get("tombstoned", False)),
            custom=dict(record.get("custom", {})),
        )


@dataclass(frozen=True)
class StreamInfo:
    stream_id: str
    version: int
    first_visible_version: int | None
    visible_count: int
    created_at: dt.datetime
    last_event_at: dt.datetime
    deleted: bool


Listener = Callable[[list[RecordedEvent]], None]


class EventStore:
    """The event log with per-stream indexes. Thread-safe: appends are serialised by a lock."""

    def __init__(self, backend: Backend | None = None, *, clock: Callable[[], dt.datetime] = _utcnow) -> None:
        self.backend: Backend = backend if backend is not None else InMemoryBackend()
        self.clock = clock
        self._lock = threading.RLock()
        self._log: list[RecordedEvent] = []
        self._streams: dict[str, list[RecordedEvent]] = {}
        self._by_id: dict[str, RecordedEvent] = {}
        self._meta: dict[str, StreamMetadata] = {
            stream_id: StreamMetadata.from_record(record) for stream_id, record in self.backend.load_meta().items()
        }
        self._listeners: list[Listener] = []
        for event in self.backend.load():
            self._index(event)

    def _index(self, event: RecordedEvent) -> None:
        if event.position != len(self._log) + 1:
            raise CorruptLog(f"position {event.position} follows {len(self._log)}")
        stream = self._streams.setdefault(event.stream_id, [])
        if event.version != len(stream) + 1:
            raise CorruptLog(f"{event.stream_id}: version {event.version} follows {len(stream)}")
        self._log.append(event)
        stream.append(event)
        self._by_id[event.event_id] = event

    # writing

    @property
    def position(self) -> int:
        """Global position of the newest event (0 for an empty store)."""
        return len(self._log)

    def stream_version(self, stream_id: str) -> int:
        """How many events were ever appended to the stream (0 if none); hidden events count too."""
        return len(self._streams.get(stream_id, ()))

    def append(self, stream_id: str, events: Iterable[EventData], expected_version: int = ANY) -> int:
        """Append `events` atomically; returns the stream's new version.

        Re-appending events whose ids are all already in the stream is a no-op that returns the version
        of the last of them, so a writer can safely retry after a timeout.
        """
        validate_stream_id(stream_id)
        batch = list(events)
        if not batch:
            raise EventStoreError("nothing to append")
        if len({e.event_id for e in batch}) != len(batch):
            raise EventStoreError("duplicate event ids in one append")
        with self._lock:
            meta = self._meta.get(stream_id)
            if meta is not None and meta.tombstoned:
                raise StreamDeleted(stream_id)
            known = [self._by_id.get(e.event_id) for e in batch]
            if all(k is not None for k in known):
                if any(k.stream_id != stream_id for k in known):  # type: ignore[union-attr]
                    raise EventStoreError("event ids already used in another stream")
                return max(k.version for k in known)  # type: ignore[union-attr]
            if any(k is not None for k in known):
                raise EventStoreError("some of these events were appended before, some not")
            current = self.stream_version(stream_id)
            check_expected_version(stream_id, expected_version, current)
            now = self.clock()
            recorded = []
            for offset, event in enumerate(batch, 1):
                recorded.append(RecordedEvent(
                    stream_id=stream_id,
                    version=current + offset,
                    position=self.position + offset,
                    type=event.type,
                    data=loads(dumps(dict(event.data))),
                    metadata=loads(dumps(dict(event.metadata))),
                    event_id=event.event_id,
                    recorded_at=now,
                ))
            self.backend.write(recorded)
            for event in recorded:
                self._index(event)
            if meta is not None and meta.deleted:
                meta.deleted = False  # appending to a soft-deleted stream brings it back
                self._save_meta(stream_id, meta)
            listeners = list(self._listeners)
        for listener in listeners:
            listener(recorded)
        return current + len(batch)

    # reading

    def _visible(self, stream_id: str) -> list[RecordedEvent]:
        events = self._streams.get(stream_id)
        meta = self._meta.get(stream_id)
        if events is None:
            raise StreamNotFound(stream_id)
        if meta is None:
            return events
        if meta.tombstoned or meta.deleted:
            raise StreamDeleted(stream_id)
        visible = events
        if meta.truncate_before is not None:
            visible = [e for e in visible if e.version >= meta.truncate_before]
        if meta.max_age is not None:
            cutoff = self.clock() - meta.max_age
            visible = [e for e in visible if e.recorded_at >= cutoff]
        if meta.max_count is not None:
            visible = visible[-meta.max_count:] if meta.max_count else []
        return visible

    def read_stream(self, stream_id: str, from_version: int = 1, count: int | None = None,
                    backwards: bool = False) -> list[RecordedEvent]:
        """Visible events of a stream with version >= from_version (<= when reading backwards), in order.

        Reading backwards with from_version=-1 starts at the newest event.
        """
        if count is not None and count < 0:
            raise EventStoreError("count must not be negative")
        with self._lock:
            visible = self._visible(stream_id)
        if backwards:
            start = len(self._streams[stream_id]) if from_version == -1 else from_version
            selected = [e for e in reversed(visible) if e.version <= start]
        else:
            if from_version < 1:
                raise EventStoreError("stream versions start at 1")
            selected = [e for e in visible if e.version >= from_version]
        return selected if count is None else selected[:count]

    def iter_stream(self, stream_id: str, from_version: int = 1, page_size: int = 500) -> Iterator[RecordedEvent]:
        """Read a long stream page by page."""
        while True:
            page = self.read_stream(stream_id, from_version, page_size)
            yield from page
            if len(page) < page_size:
                return
            from_version = page[-1].version + 1

    def last_event(self, stream_id: str) -> RecordedEvent | None:
        events = self.read_stream(stream_id, -1, 1, backwards=True)
        return events[0] if events else None

    def get_event(self, event_id: str) -> RecordedEvent:
        try:
            return self._by_id[event_id]
        except KeyError:
            raise EventStoreError(f"no event {event_id!r}") from None

    def _is_hidden_stream(self, stream_id: str) -> bool:
        meta = self._meta.get(stream_id)
        return meta is not None and (meta.deleted or meta.tombstoned)

    def read_all(self, from_position: int = 1, count: int | None = None, *, types: Iterable[str] | None = None,
                 category: str | None = None, include_deleted: bool = False) -> list[RecordedEvent]:
        """Events from the global log with position >= from_position, optionally filtered.

        Events of deleted streams are skipped unless `include_deleted`; stream truncation rules do not
        apply here (the global log is what projections replay).
        """
        if from_position < 1:
            raise EventStoreError("positions start at 1")
        wanted = set(types) if types is not None else None
        out = []
        with self._lock:
            for event in self._log[from_position - 1:]:
                if wanted is not None and event.type not in wanted:
                    continue
                if category is not None and stream_category(event.stream_id) != category:
                    continue
                if not include_deleted and self._is_hidden_stream(event.stream_id):
                    continue
                out.append(event)
                if count is not None and len(out) >= count:
                    break
        return out

    # stream management

    def _save_meta(self, stream_id: str, meta: StreamMetadata) -> None:
        self._meta[stream_id] = meta
        self.backend.write_meta(stream_id, meta.to_record())

    def get_stream_metadata(self, stream_id: str) -> StreamMetadata:
        return copy.deepcopy(self._meta.get(stream_id, StreamMetadata()))

    def set_stream_metadata(self, stream_id: str, *, max_count: int | None = None, max_age: dt.timedelta | None = None,
                            custom: Mapping[str, Any] | None = None) -> None:
        validate_stream_id(stream_id)
        if max_count is not None and max_count < 0:
            raise EventStoreError("max_count must not be negative")
        with self._lock:
            meta = self._meta.get(stream_id, StreamMetadata())
            if meta.tombstoned:
                raise StreamDeleted(stream_id)
            meta.max_count = max_count
            meta.max_age = max_age
            if custom is not None:
                meta.custom = dict(custom)
            self._save_meta(stream_id, meta)

    def truncate(self, stream_id: str, before_version: int) -> None:
        """Hide every event below `before_version` (e.g. once a snapshot makes them unnecessary)."""
        with self._lock:
            if stream_id not in self._streams:
                raise StreamNotFound(stream_id)
            meta = self._meta.get(stream_id, StreamMetadata())
            meta.truncate_before = max(before_version, meta.truncate_before or 1)
            self._save_meta(stream_id, meta)

    def delete_stream(self, stream_id: str, expected_version: int = ANY, *, hard: bool = False) -> None:
        """Soft delete (the stream can be written again, its old events stay hidden) or hard delete (tombstone)."""
        with self._lock:
            if stream_id not in self._streams:
                raise StreamNotFound(stream_id)
            check_expected_version(stream_id, expected_version, self.stream_version(stream_id))
            meta = self._meta.get(stream_id, StreamMetadata())
            if meta.tombstoned:
                raise StreamDeleted(stream_id)
            meta.deleted = True
            meta.tombstoned = hard
            meta.truncate_before = self.stream_version(stream_id) + 1
            self._save_meta(stream_id, meta)

    def streams(self, category: str | None = None) -> list[str]:
        """Stream ids in order of creation, without deleted ones."""
        return [
            s for s in self._streams
            if not self._is_hidden_stream(s) and (category is None or stream_category(s) == category)
        ]

    def stream_info(self, stream_id: str) -> StreamInfo:
        with self._lock:
            if stream_id not in self._streams:
                raise StreamNotFound(stream_id)
            events = self._streams[stream_id]
            deleted = self._is_hidden_stream(stream_id)
            visible = [] if deleted else self._visible(stream_id)
        return StreamInfo(
            stream_id=stream_id,
            version=len(events),
            first_visible_version=visible[0].version if visible else None,
            visible_count=len(visible),
            created_at=events[0].recorded_at,
            last_event_at=events[-1].recorded_at,
            deleted=deleted,
        )

    def stats(self) -> dict[str, Any]:
        types: dict[str, int] = {}
        for event in self._log:
            types[event.type] = types.get(event.type, 0) + 1
        return {
            "events": len(self._log),
            "streams": len(self.streams()),
            "deleted_streams": sum(1 for s in self._streams if self._is_hidden_stream(s)),
            "event_types": dict(sorted(types.items())),
        }

    # listening

    def add_listener(self, listener: Listener) -> Callable[[], None]:
        """Call `listener` with each appended batch (after it is stored); returns a function to remove it."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def close(self) -> None:
        self.backend.close()


# --- subscriptions -------------------------------------------------------------------------------


class CheckpointStore(Protocol):
    def load(self, name: str) -> int | None: ...
    def save(self, name: str, position: int) -> None: ...


class InMemoryCheckpoints:
    def __init__(self) -> None:
        self.positions: dict[str, int] = {}

    def load(self, name: str) -> int | None:
        return self.positions.get(name)

    def save(self, name: str, position: int) -> None:
        self.positions[name] = position


class FileCheckpoints:
    """Checkpoints in one small JSON file, replaced atomically on every save."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def _read(self) -> dict[str, int]:
        if not self.path.exists():
            return {}
        try:
            return json.loads(self.path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise CorruptLog(f"{self.path}: {exc}") from None

    def load(self, name: str) -> int | None:
        return self._read().get(name)

    def save(self, name: str, position: int) -> None:
        data = self._read()
        data[name] = position
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


class Subscription:
    """A catch-up subscription to the global log.

    `start()` replays every matching event after the saved checkpoint, then follows new appends as
    they happen. Each event reaches the handler once, in position order. If the handler raises while
    following live appends, the subscription stops (`failed` holds the error); the writer that
    appended is not affected. `start()` again resumes from the last checkpoint.
    """

    def __init__(self, store: EventStore, name: str, handler: Callable[[RecordedEvent], None], *,
                 checkpoints: CheckpointStore | None = None, types: Iterable[str] | None = None,
                 category: str | None = None, batch_size: int = 256, checkpoint_every: int = 1) -> None:
        self.store = store
        self.name = name
        self.handler = handler
        self.checkpoints = checkpoints if checkpoints is not None else InMemoryCheckpoints()
        self.types = frozenset(types) if types is not None else None
        self.category = category
        self.batch_size = batch_size
        self.checkpoint_every = max(1, checkpoint_every)
        self.position = 0
        self.delivered = 0
        self.failed: BaseException | None = None
        self._remove_listener: Callable[[], None] | None = None
        self._lock = threading.RLock()
        self._since_checkpoint = 0

    @property
    def running(self) -> bool:
        return self._remove_listener is not None

    def _matches(self, event: RecordedEvent) -> bool:
        if self.types is not None and event.type not in self.types:
            return False
        return self.category is None or stream_category(event.stream_id) == self.category

    def _deliver(self, event: RecordedEvent) -> None:
        if event.position <= self.position:
            return  # already seen (live batch overlapping the catch-up read)
        if self._matches(event):
            self.handler(event)
            self.delivered += 1
        self.position = event.position
        self._since_checkpoint += 1
        if self._since_checkpoint >= self.checkpoint_every:
            self.save_checkpoint()

    def save_checkpoint(self) -> None:
        self.checkpoints.save(self.name, self.position)
        self._since_checkpoint = 0

    def catch_up(self) -> int:
        """Deliver everything after the current position; returns how many events were delivered."""
        before = self.delivered
        with self._lock:
            while True:
                batch = self.store.read_all(self.position + 1, self.batch_size, include_deleted=True)
                for event in batch:
                    self._deliver(event)
                if len(batch) < self.batch_size:
                    break
        return self.delivered - before

    def _on_append(self, events: list[RecordedEvent]) -> None:
        with self._lock:
            try:
                if events and events[0].position > self.position + 1:
                    self.catch_up()  # we missed something (e.g. appended while catching up)
                for event in events:
                    self._deliver(event)
            except Exception as exc:  # never let a consumer's bug break the writer
                self.failed = exc
                self.stop()

    def start(self) -> Subscription:
        if self.running:
            return self
        self.failed = None
        self.position = self.checkpoints.load(self.name) or 0
        self.catch_up()
        self._remove_listener = self.store.add_listener(self._on_append)
        self.catch_up()  # events appended between the first catch-up and registering
        return self

    def stop(self) -> None:
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        self.save_checkpoint()


# --- aggregates, snapshots, repositories ---------------------------------------------------------


class AggregateNotFound(EventStoreError):
    pass


class Aggregate:
    """Base class of event-sourced domain objects.

    Subclasses change state only in `apply_<EventClassName>(event)` methods, and record changes by
    calling `self.record(event)`, which applies the event and queues it for saving.
    """

    category: str = "aggregate"

    def __init__(self, aggregate_id: str) -> None:
        self.id = aggregate_id
        self.version = 0
        self._pending: list[Any] = []

    @property
    def stream_id(self) -> str:
        return f"{self.category}-{self.id}"

    @property
    def pending_events(self) -> list[Any]:
        return list(self._pending)

    def record(self, event: Any) -> None:
        self.apply(event)
        self._pending.append(event)

    def apply(self, event: Any) -> None:
        method = getattr(self, f"apply_{type(event).__name__}", None)
        if method is None:
            raise EventStoreError(f"{type(self).__name__} has no apply_{type(event).__name__}()")
        method(event)

    def mark_saved(self, version: int) -> None:
        self.version = version
        self._pending.clear()

    def snapshot_state(self) -> dict[str, Any]:
        """State to put in a snapshot: by default every public attribute except id and version."""
        return {k: copy.deepcopy(v) for k, v in vars(self).items() if not k.startswith("_") and k not in ("id", "version")}

    def restore_snapshot(self, state: Mapping[str, Any]) -> None:
        for key, value in state.items():
            setattr(self, key, copy.deepcopy(value))


@dataclass(frozen=True)
class Snapshot:
    stream_id: str
    version: int
    state: Mapping[str, Any]
    taken_at: dt.datetime


class SnapshotStore:
    """Keeps the newest snapshot per stream (older ones are useless once a newer one exists)."""

    def __init__(self) -> None:
        self._snapshots: dict[str, Snapshot] = {}

    def save(self, snapshot: Snapshot) -> None:
        current = self._snapshots.get(snapshot.stream_id)
        if current is None or snapshot.version > current.version:
            self._snapshots[snapshot.stream_id] = snapshot

    def load(self, stream_id: str) -> Snapshot | None:
        return self._snapshots.get(stream_id)

    def delete(self, stream_id: str) -> None:
        self._snapshots.pop(stream_id, None)


A = TypeVar("A", bound=Aggregate)


class Repository:
    """Loads and saves aggregates of one class through an event store."""

    def __init__(self, store: EventStore, registry: EventTypeRegistry, aggregate_cls: type[A], *,
                 snapshots: SnapshotStore | None = None, snapshot_every: int | None = None) -> None:
        if snapshot_every is not None and snapshot_every < 1:
            raise EventStoreError("snapshot_every must be at least 1")
        self.store = store
        self.registry = registry
        self.aggregate_cls = aggregate_cls
        self.snapshots = snapshots
        self.snapshot_every = snapshot_every

    def _stream_id(self, aggregate_id: str) -> str:
        return self.aggregate_cls(aggregate_id).stream_id

    def exists(self, aggregate_id: str) -> bool:
        return self.store.stream_version(self._stream_id(aggregate_id)) > 0

    def load(self, aggregate_id: str) -> A:
        """Rebuild the aggregate: from its latest snapshot if there is one, then the events after it."""
        aggregate = self.aggregate_cls(aggregate_id)
        stream_id = aggregate.stream_id
        snapshot = self.snapshots.load(stream_id) if self.snapshots is not None else None
        from_version = 1
        if snapshot is not None:
            aggregate.restore_snapshot(snapshot.state)
            aggregate.version = snapshot.version
            from_version = snapshot.version
        try:
            events = self.store.read_stream(stream_id, from_version)
        except StreamNotFound:
            raise AggregateNotFound(f"{self.aggregate_cls.__name__} {aggregate_id!r} does not exist") from None
        for recorded in events:
            aggregate.apply(self.registry.from_recorded(recorded))
            aggregate.version = recorded.version
        if aggregate.version == 0:
            raise AggregateNotFound(f"{self.aggregate_cls.__name__} {aggregate_id!r} has no events")
        return aggregate

    def save(self, aggregate: A, metadata: Mapping[str, Any] | None = None) -> int:
        """Append the aggregate's pending events; raises WrongExpectedVersion if the stream moved on."""
        pending = aggregate.pending_events
        if not pending:
            return aggregate.version
        expected = aggregate.version if aggregate.version > 0 else NO_STREAM
        batch = [self.registry.to_event_data(event, metadata) for event in pending]
        old_version = aggregate.version
        new_version = self.store.append(aggregate.stream_id, batch, expected)
        aggregate.mark_saved(new_version)
        if self.snapshots is not None and self.snapshot_every:
            if new_version // self.snapshot_every > old_version // self.snapshot_every:
                self.take_snapshot(aggregate)
        return new_version

    def take_snapshot(self, aggregate: A) -> Snapshot:
        if self.snapshots is None:
            raise EventStoreError("this repository has no snapshot store")
        if aggregate.pending_events:
            raise EventStoreError("save the aggregate before snapshotting it")
        snapshot = Snapshot(aggregate.stream_id, aggregate.version, aggregate.snapshot_state(), self.store.clock())
        self.snapshots.save(snapshot)
        return snapshot

    def load_at(self, aggregate_id: str, version: int) -> A:
        """The aggregate as it was at `version` (no snapshots: history is replayed from the start)."""
        aggregate = self.aggregate_cls(aggregate_id)
        for recorded in self.store.read_stream(aggregate.stream_id, 1, version):
            aggregate.apply(self.registry.from_recorded(recorded))
            aggregate.version = recorded.version
        if aggregate.version != version:
            raise EventStoreError(f"{aggregate.stream_id} has no version {version}")
        return aggregate


# --- typed access ----------------------------------------------------------------------------------


class TypedStream:
    """Append and read one stream as registered dataclass events instead of raw EventData.

    >>> stream = TypedStream(store, registry, "account-1")
    >>> stream.append([Opened("ann")], expected_version=NO_STREAM)
    1
    """

    def __init__(self, store: EventStore, registry: EventTypeRegistry, stream_id: str) -> None:
        self.store = store
        self.registry = registry
        self.stream_id = validate_stream_id(stream_id)

    @property
    def version(self) -> int:
        return self.store.stream_version(self.stream_id)

    def append(self, events: Iterable[Any], expected_version: int = ANY,
               metadata: Mapping[str, Any] | None = None) -> int:
        batch = [self.registry.to_event_data(event, metadata) for event in events]
        return self.store.append(self.stream_id, batch, expected_version)

    def read(self, from_version: int = 1, count: int | None = None) -> list[Any]:
        return [self.registry.from_recorded(r) for r in self.store.read_stream(self.stream_id, from_version, count)]

    def fold(self, initial: Any, reducer: Callable[[Any, Any], Any]) -> Any:
        """reduce() over the stream's events, oldest first: the functional way to build state."""
        state = initial
        for recorded in self.store.iter_stream(self.stream_id):
            state = reducer(state, self.registry.from_recorded(recorded))
        return state


# --- metrics -------------------------------------------------------------------------------------


class StoreMetrics:
    """Counts what flows through a store: appended events and batches per category and type.

    Attach with `StoreMetrics(store)`; `snapshot()` returns plain dicts for a metrics endpoint.
    """

    def __init__(self, store: EventStore) -> None:
        self.batches = 0
        self.events = 0
        self.by_category: dict[str, int] = {}
        self.by_type: dict[str, int] = {}
        self.largest_batch = 0
        self._lock = threading.Lock()
        self._remove = store.add_listener(self._on_append)

    def _on_append(self, events: list[RecordedEvent]) -> None:
        with self._lock:
            self.batches += 1
            self.events += len(events)
            self.largest_batch = max(self.largest_batch, len(events))
            for event in events:
                category = stream_category(event.stream_id)
                self.by_category[category] = self.by_category.get(category, 0) + 1
                self.by_type[event.type] = self.by_type.get(event.type, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "batches": self.batches,
                "events": self.events,
                "largest_batch": self.largest_batch,
                "mean_batch": self.events / self.batches if self.batches else 0.0,
                "by_category": dict(sorted(self.by_category.items())),
                "by_type": dict(sorted(self.by_type.items())),
            }

    def close(self) -> None:
        self._remove()


# --- commands ------------------------------------------------------------------------------------

C = TypeVar("C")


class CommandRejected(EventStoreError):
    """A command handler refused the command (a business rule, not a technical failure)."""


class CommandBus:
    """Routes commands to handlers and retries on concurrency conflicts.

    A handler loads an aggregate, calls a method on it and saves it. If another writer saved the same
    aggregate in between, the save raises WrongExpectedVersion; the bus then runs the handler again
    on fresh state, up to `max_attempts` times. Any other error propagates at once.
    """

    def __init__(self, *, max_attempts: int = 3) -> None:
        if max_attempts < 1:
            raise EventStoreError("max_attempts must be at least 1")
        self.max_attempts = max_attempts
        self._handlers: dict[type, Callable[[Any], Any]] = {}
        self.conflicts = 0

    def register(self, command_type: type[C], handler: Callable[[C], Any]) -> None:
        if command_type in self._handlers:
            raise EventStoreError(f"{command_type.__name__} already has a handler")
        self._handlers[command_type] = handler

    def handles(self, command_type: type[C]) -> Callable[[Callable[[C], Any]], Callable[[C], Any]]:
        def decorate(handler: Callable[[C], Any]) -> Callable[[C], Any]:
            self.register(command_type, handler)
            return handler
        return decorate

    def dispatch(self, command: Any) -> Any:
        handler = self._handlers.get(type(command))
        if handler is None:
            raise EventStoreError(f"no handler for {type(command).__name__}")
        for attempt in range(1, self.max_attempts + 1):
            try:
                return handler(command)
            except WrongExpectedVersion:
                self.conflicts += 1
                if attempt == self.max_attempts:
                    raise


# --- projections ---------------------------------------------------------------------------------


class Projection:
    """A read model built from the global log.

    Subclasses define `on_<EventType>(event: RecordedEvent)` methods; events without a handler are
    skipped. `reset()` must return the read model to its empty state (used by rebuilds).
    """

    name: str = "projection"

    def handled_types(self) -> set[str]:
        return {attr[3:] for attr in dir(self) if attr.startswith("on_") and callable(getattr(self, attr))}

    def handle(self, event: RecordedEvent) -> None:
        method = getattr(self, f"on_{event.type}", None)
        if method is not None:
            method(event)

    def reset(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot be rebuilt: it does not implement reset()")


@dataclass(frozen=True)
class DeadLetter:
    event: RecordedEvent
    error: str
    attempts: int


class ProjectionRunner:
    """Feeds a projection from the log, checkpointing as it goes.

    A failing event is retried up to `max_retries` more times. Then, with on_error="park" (default),
    it is moved to `dead_letters` and the runner continues; with on_error="stop", the runner raises
    ProjectionError and the checkpoint stays before the failing event.
    """

    def __init__(self, store: EventStore, projection: Projection, *, checkpoints: CheckpointStore | None = None,
                 max_retries: int = 2, on_error: str = "park", batch_size: int = 256) -> None:
        if on_error not in ("park", "stop"):
            raise EventStoreError("on_error must be 'park' or 'stop'")
        self.store = store
        self.projection = projection
        self.checkpoints = checkpoints if checkpoints is not None else InMemoryCheckpoints()
        self.max_retries = max_retries
        self.on_error = on_error
        self.batch_size = batch_size
        self.dead_letters: list[DeadLetter] = []
        self.processed = 0
        self.position = self.checkpoints.load(self.checkpoint_name) or 0

    @property
    def checkpoint_name(self) -> str:
        return f"projection:{self.projection.name}"

    def _handle(self, event: RecordedEvent) -> None:
        last_error: Exception | None = None
        for attempt in range(1, self.max_retries + 2):
            try:
                self.projection.handle(event)
                return
            except Exception as exc:  # the projection's own bug or bad data; decide below
                last_error = exc
        message = f"{type(last_error).__name__}: {last_error}"
        if self.on_error == "stop":
            raise ProjectionError(f"{self.projection.name} failed on event {event.position}: {message}") from last_error
        self.dead_letters.append(DeadLetter(event, message, attempt))

    def run_once(self) -> int:
        """Process every event after the checkpoint; returns how many were processed."""
        handled = self.projection.handled_types()
        count = 0
        while True:
            batch = self.store.read_all(self.position + 1, self.batch_size, include_deleted=True)
            for event in batch:
                if event.type in handled:
                    self._handle(event)
                self.position = event.position
                self.checkpoints.save(self.checkpoint_name, self.position)
                count += 1
            if len(batch) < self.batch_size:
                break
        self.processed += count
        return count

    def rebuild(self) -> int:
        """Throw the read model away and replay the whole log into it."""
        self.projection.reset()
        self.dead_letters.clear()
        self.position = 0
        self.checkpoints.save(self.checkpoint_name, 0)
        return self.run_once()

    def retry_dead_letters(self) -> int:
        """Run the parked events again (after fixing the projection); returns how many now succeeded."""
        parked, self.dead_letters = self.dead_letters, []
        succeeded = 0
        for letter in parked:
            before = len(self.dead_letters)
            self._handle(letter.event)
            if len(self.dead_letters) == before:
                succeeded += 1
        return succeeded

    def lag(self) -> int:
        return self.store.position - self.position

    def status(self) -> dict[str, Any]:
        return {
            "projection": self.projection.name,
            "position": self.position,
            "lag": self.lag(),
            "processed": self.processed,
            "dead_letters": len(self.dead_letters),
        }


class EventTypeCounter(Projection):
    """Counts events per type: the simplest useful projection, handy for dashboards and tests."""

    name = "event-type-counter"

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def handled_types(self) -> set[str]:
        return {"*"}

    def handle(self, event: RecordedEvent) -> None:
        self.counts[event.type] = self.counts.get(event.type, 0) + 1

    def reset(self) -> None:
        self.counts = {}


class _AllTypesRunner(ProjectionRunner):
    """A runner that hands every event to its projection (for projections whose handled_types is {'*'})."""

    def run_once(self) -> int:
        count = 0
        while True:
            batch = self.store.read_all(self.position + 1, self.batch_size, include_deleted=True)
            for event in batch:
                self._handle(event)
                self.position = event.position
                count += 1
            self.checkpoints.save(self.checkpoint_name, self.position)
            if len(batch) < self.batch_size:
                break
        self.processed += count
        return count


def runner_for(store: EventStore, projection: Projection, **kwargs: Any) -> ProjectionRunner:
    """The right runner for `projection`: one that filters by handled types, or one that passes all events."""
    if "*" in projection.handled_types():
        return _AllTypesRunner(store, projection, **kwargs)
    return ProjectionRunner(store, projection, **kwargs)


class PartitionedProjection(Projection):
    """Keeps one state dict per stream, updated by `evolve(state, event) -> state`.

    Good for "current status of each order" style read models.
    """

    name = "partitioned"

    def __init__(self, evolve: Callable[[dict[str, Any], RecordedEvent], dict[str, Any]], types: Iterable[str],
                 category: str | None = None, name: str | None = None) -> None:
        self.evolve = evolve
        self.types = set(types)
        self.category = category
        if name:
            self.name = name
        self.states: dict[str, dict[str, Any]] = {}

    def handled_types(self) -> set[str]:
        return set(self.types)

    def handle(self, event: RecordedEvent) -> None:
        if self.category is not None and stream_category(event.stream_id) != self.category:
            return
        current = self.states.get(event.stream_id, {})
        self.states[event.stream_id] = self.evolve(dict(current), event)

    def reset(self) -> None:
        self.states = {}

    def get(self, stream_id: str) -> dict[str, Any] | None:
        return self.states.get(stream_id)

    def where(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, dict[str, Any]]:
        return {stream_id: state for stream_id, state in self.states.items() if predicate(state)}


# --- process managers ----------------------------------------------------------------------------


class ProcessManager:
    """Reacts to events by appending new events to other streams (a saga / workflow).

    Subclasses define `when_<EventType>(event) -> list[tuple[stream_id, EventData]]`. Reactions are
    appended with event ids derived from the triggering event, so replaying the same trigger (after a
    restart) does not duplicate them: the store treats the re-append as a no-op.
    """

    name = "process"

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self.reactions = 0

    def react(self, event: RecordedEvent) -> None:
        method = getattr(self, f"when_{event.type}", None)
        if method is None:
            return
        for index, (stream_id, reaction) in enumerate(method(event)):
            derived_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.name}/{event.event_id}/{index}"))
            meta = {
                "correlation_id": event.correlation_id or event.event_id,
                "causation_id": event.event_id,
                **reaction.metadata,
            }
            self.store.append(stream_id, [EventData(reaction.type, reaction.data, meta, derived_id)])
            self.reactions += 1

    def subscription(self, checkpoints: CheckpointStore | None = None) -> Subscription:
        return Subscription(self.store, f"process:{self.name}", self.react, checkpoints=checkpoints)


def correlated(store: EventStore, correlation_id: str) -> list[RecordedEvent]:
    """Every event of one workflow, in log order: the one that started it and everything it caused."""
    return [
        event for event in store.read_all(include_deleted=True)
        if event.event_id == correlation_id or event.correlation_id == correlation_id
    ]


# --- export, import, migration -------------------------------------------------------------------


def export_events(store: EventStore, out: Any, *, category: str | None = None, include_deleted: bool = False) -> int:
    """Write events as JSON lines to the text file `out`; returns how many were written."""
    count = 0
    for event in store.read_all(category=category, include_deleted=include_deleted):
        out.write(dumps(event.to_record()) + "\n")
        count += 1
    return count


def import_events(store: EventStore, lines: Iterable[str]) -> int:
    """Append exported events to `store`, stream by stream, keeping event ids (so importing twice is harmless).

    Versions and positions are renumbered by the target store; the relative order within each stream is kept.
    """
    count = 0
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = RecordedEvent.from_record(loads(line))
        except (SerializationError, CorruptLog) as exc:
            raise CorruptLog(f"line {lineno}: {exc}") from None
        before = store.stream_version(record.stream_id)
        store.append(record.stream_id, [EventData(record.type, record.data, record.metadata, record.event_id)])
        count += store.stream_version(record.stream_id) - before
    return count


Migration = Callable[[RecordedEvent], "list[EventData] | EventData | None"]


def migrate(source: EventStore, target: EventStore, transform: Migration) -> dict[str, int]:
    """Copy `source` into `target`, passing every event through `transform`.

    `transform` returns the event(s) to write instead (same stream), or None to drop the event. Use it to
    rename event types, split events, or drop obsolete ones when the model changes.
    """
    kept = dropped = produced = 0
    for event in source.read_all(include_deleted=False):
        result = transform(event)
        if result is None:
            dropped += 1
            continue
        batch = result if isinstance(result, list) else [result]
        if batch:
            target.append(event.stream_id, batch)
        kept += 1
        produced += len(batch)
    return {"kept": kept, "dropped": dropped, "written": produced}


def rename_types(mapping: Mapping[str, str]) -> Migration:
    """A migration that renames event types and keeps everything else (ids included)."""
    def transform(event: RecordedEvent) -> EventData:
        return EventData(mapping.get(event.type, event.type), event.data, event.metadata, event.event_id)
    return transform


def events_between(store: EventStore, start: dt.datetime, end: dt.datetime, **filters: Any) -> list[RecordedEvent]:
    """Events recorded in [start, end), in log order."""
    return [e for e in store.read_all(**filters) if start <= e.recorded_at < end]


# --- compaction ----------------------------------------------------------------------------------


def scavenge(store: EventStore, target: Backend) -> dict[str, int]:
    """Write a compacted copy of the log into the empty backend `target`.

    Events of hard-deleted streams and events hidden by truncation are left out; soft-deleted streams
    keep only their tombstone metadata. Positions are renumbered, stream versions are kept, so a
    compacted stream can keep growing from the same version. Returns counts of kept and dropped events.
    """
    if any(True for _ in target.load()):
        raise EventStoreError("scavenge needs an empty target backend")
    kept: list[RecordedEvent] = []
    dropped = 0
    keep_versions: dict[str, int] = {}
    for stream_id in list(store._streams):
        meta = store._meta.get(stream_id)
        if meta is None:
            keep_versions[stream_id] = 1
        elif meta.tombstoned:
            keep_versions[stream_id] = store.stream_version(stream_id) + 1
        else:
            keep_versions[stream_id] = meta.truncate_before or 1
    for event in store._log:
        if event.version < keep_versions[event.stream_id]:
            dropped += 1
            continue
        kept.append(dataclasses.replace(event, position=len(kept) + 1))
    target.write(kept)
    for stream_id, meta in store._meta.items():
        target.write_meta(stream_id, meta.to_record())
    return {"kept": len(kept), "dropped": dropped}


class _CompactedStore(EventStore):
    """An EventStore that accepts streams whose first stored version is above 1 (a scavenged log)."""

    def _index(self, event: RecordedEvent) -> None:
        if event.position != len(self._log) + 1:
            raise CorruptLog(f"position {event.position} follows {len(self._log)}")
        stream = self._streams.setdefault(event.stream_id, [])
        self._log.append(event)
        stream.append(event)
        self._by_id[event.event_id] = event

    def stream_version(self, stream_id: str) -> int:
        events = self._streams.get(stream_id)
        if events:
            return events[-1].version
        meta = self._meta.get(stream_id)
        return (meta.truncate_before - 1) if meta is not None and meta.truncate_before else 0


def open_compacted(backend: Backend, **kwargs: Any) -> EventStore:
    """Open a backend written by `scavenge`."""
    return _CompactedStore(backend, **kwargs)


# --- waiting for positions -----------------------------------------------------------------------


class PositionWatcher:
    """Lets a reader wait until the log reaches a position (read-your-writes across threads)."""

    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._condition = threading.Condition()
        self._remove = store.add_listener(self._on_append)

    def _on_append(self, events: list[RecordedEvent]) -> None:
        with self._condition:
            self._condition.notify_all()

    def wait_for(self, position: int, timeout: float | None = None) -> bool:
        """True once store.position >= position; False if `timeout` seconds pass first."""
        with self._condition:
            return self._condition.wait_for(lambda: self.store.position >= position, timeout)

    def close(self) -> None:
        self._remove()


# --- testing aggregates --------------------------------------------------------------------------


class AggregateScenario:
    """Given-when-then tests for aggregates, without a store.

        AggregateScenario(Account, "acc-1").given(Opened(...), Deposited(...)) \\
            .when(lambda account: account.withdraw(30)) \\
            .then(Withdrawn(...))
    """

    def __init__(self, aggregate_cls: type[A], aggregate_id: str = "test") -> None:
        self.aggregate = aggregate_cls(aggregate_id)
        self._error: BaseException | None = None
        self._acted = False

    def given(self, *events: Any) -> AggregateScenario:
        for event in events:
            self.aggregate.apply(event)
            self.aggregate.version += 1
        return self

    def when(self, action: Callable[[Any], Any]) -> AggregateScenario:
        self._acted = True
        try:
            action(self.aggregate)
        except Exception as exc:  # kept for then_raises(); anything else re-raises in then()
            self._error = exc
        return self

    def then(self, *expected: Any) -> AggregateScenario:
        if not self._acted:
            raise EventStoreError("call when() before then()")
        if self._error is not None:
            raise AssertionError(f"expected events, got {type(self._error).__name__}: {self._error}") from self._error
        actual = self.aggregate.pending_events
        if actual != list(expected):
            raise AssertionError(f"expected events {list(expected)!r}, got {actual!r}")
        return self

    def then_raises(self, error_type: type[BaseException], match: str | None = None) -> AggregateScenario:
        if not isinstance(self._error, error_type):
            raise AssertionError(f"expected {error_type.__name__}, got {self._error!r}")
        if match is not None and not re.search(match, str(self._error)):
            raise AssertionError(f"error {str(self._error)!r} does not match {match!r}")
        if self.aggregate.pending_events:
            raise AssertionError(f"a failed command recorded events: {self.aggregate.pending_events!r}")
        return self


# --- outbox --------------------------------------------------------------------------------------


@dataclass
class OutboxStatus:
    position: int
    published: int
    failures: int
    next_attempt_at: dt.datetime | None
    last_error: str | None


class Outbox:
    """Publishes stored events to an external broker, at least once, in log order.

    `publish(event)` is the broker call. When it raises, the outbox stops at that event and retries it
    on a later `pump()` after an exponential backoff (base_delay * 2**failures, capped at max_delay);
    nothing after it is published first, so consumers always see events in order.
    """

    def __init__(self, store: EventStore, publish: Callable[[RecordedEvent], None], *,
                 checkpoints: CheckpointStore | None = None, name: str = "outbox",
                 types: Iterable[str] | None = None, base_delay: float = 1.0, max_delay: float = 300.0) -> None:
        self.store = store
        self.publish = publish
        self.checkpoints = checkpoints if checkpoints is not None else InMemoryCheckpoints()
        self.name = name
        self.types = frozenset(types) if types is not None else None
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.position = self.checkpoints.load(f"outbox:{name}") or 0
        self.published = 0
        self.failures = 0
        self.next_attempt_at: dt.datetime | None = None
        self.last_error: str | None = None

    def _backoff(self) -> dt.timedelta:
        return dt.timedelta(seconds=min(self.max_delay, self.base_delay * 2 ** (self.failures - 1)))

    def pump(self, limit: int | None = None) -> int:
        """Publish pending events (at most `limit`); returns how many were published this call."""
        now = self.store.clock()
        if self.next_attempt_at is not None and now < self.next_attempt_at:
            return 0
        sent = 0
        for event in self.store.read_all(self.position + 1, include_deleted=True):
            if limit is not None and sent >= limit:
                break
            if self.types is None or event.type in self.types:
                try:
                    self.publish(event)
                except Exception as exc:  # the broker is down or refused: retry later, in order
                    self.failures += 1
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    self.next_attempt_at = now + self._backoff()
                    break
                sent += 1
                self.published += 1
            self.position = event.position
            self.checkpoints.save(f"outbox:{self.name}", self.position)
            self.failures = 0
            self.next_attempt_at = None
            self.last_error = None
        return sent

    def status(self) -> OutboxStatus:
        return OutboxStatus(self.position, self.published, self.failures, self.next_attempt_at, self.last_error)
