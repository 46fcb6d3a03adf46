"""Metric types with optional labels, and the registry they are collected from.

    REQUESTS = Counter("http_requests_total", "Requests served.", labels=("method", "status"))
    LATENCY = Histogram("http_request_duration_seconds", "Time to serve a request.")

    REQUESTS.labels(method="GET", status="200").inc()
    with LATENCY.time():
        handle()

Durations are observed in seconds (the Prometheus convention); the default histogram buckets are seconds
too, from 5 ms to 10 s.
"""

from __future__ import annotations

import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_RESERVED_LABELS = {"le", "quantile"}

DEFAULT_BUCKETS: tuple[float, ...] = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
INF = math.inf


class MetricError(ValueError):
    pass


@dataclass(frozen=True)
class Sample:
    """One exported line: name suffix, label pairs, value."""

    suffix: str
    labels: tuple[tuple[str, str], ...]
    value: float


@dataclass(frozen=True)
class Family:
    """All samples of one metric, as the exposition format groups them."""

    name: str
    kind: str
    help: str
    samples: list[Sample] = field(default_factory=list)


def linear_buckets(start: float, width: float, count: int) -> tuple[float, ...]:
    if count < 1 or width <= 0:
        raise MetricError("linear_buckets needs count >= 1 and a positive width")
    return tuple(start + width * i for i in range(count))


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    if count < 1 or start <= 0 or factor <= 1:
        raise MetricError("exponential_buckets needs count >= 1, start > 0 and factor > 1")
    return tuple(start * factor ** i for i in range(count))


def _check_bucket_bounds(buckets: Sequence[float]) -> tuple[float, ...]:
    """Upper bounds, strictly increasing, with +Inf last (added when missing)."""
    bounds = [float(b) for b in buckets]
    if not bounds:
        raise MetricError("a histogram needs at least one bucket")
    if bounds[-1] != INF:
        bounds.append(INF)
    return tuple(bounds)


def _check_name(name: str) -> str:
    if not _METRIC_NAME.match(name):
        raise MetricError(f"invalid metric name {name!r}")
    return name


def _check_label_names(names: Iterable[str]) -> tuple[str, ...]:
    names = tuple(names)
    for label in names:
        if not _LABEL_NAME.match(label) or label.startswith("__"):
            raise MetricError(f"invalid label name {label!r}")
        if label in _RESERVED_LABELS:
            raise MetricError(f"label name {label!r} is reserved")
    if len(set(names)) != len(names):
        raise MetricError(f"duplicate label names in {names}")
    return names


# ---------------------------------------------------------------- the value holders


class _CounterValue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise MetricError("counters can only go up; use a Gauge")
        with self._lock:
            self.value += amount

    def samples(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        return [("_total", (), self.value)]


class _GaugeValue:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0.0
        self._function: Callable[[], float] | None = None

    def set(self, value: float) -> None:
        with self._lock:
            self.value = float(value)

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            self.value += amount

    def dec(self, amount: float = 1.0) -> None:
        self.inc(-amount)

    def set_function(self, function: Callable[[], float]) -> None:
        """Read the value from `function` at collection time (e.g. a queue's length)."""
        self._function = function

    def current(self) -> float:
        return float(self._function()) if self._function is not None else self.value

    def samples(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        return [("", (), self.current())]


class _HistogramValue:
    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._lock = threading.Lock()
        self.bounds = bounds
        self.counts = [0] * len(bounds)  # per bucket, not cumulative
        self.sum = 0.0

    def observe(self, value: float) -> None:
        if math.isnan(value):
            raise MetricError("cannot observe NaN")
        with self._lock:
            self.sum += value
            for index, bound in enumerate(self.bounds):
                if value <= bound:
                    self.counts[index] += 1
                    break

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        running, result = 0, []
        for bound, count in zip(self.bounds, self.counts):
            running += count
            result.append((bound, running))
        return result

    def samples(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        out: list[tuple[str, tuple[tuple[str, str], ...], float]] = []
        for bound, running in self.cumulative():
            out.append(("_bucket", (("le", format_bound(bound)),), float(running)))
        out.append(("_sum", (), self.sum))
        out.append(("_count", (), float(self.count)))
        return out


def format_bound(bound: float) -> str:
    """Bucket bounds as Prometheus writes them: '0.005', '1.0', '+Inf'."""
    if bound == INF:
        return "+Inf"
    return repr(float(bound))


class _Timer:
    def __init__(self, observe: Callable[[float], None], clock: Callable[[], float]):
        self._observe = observe
        self._clock = clock
        self._started = 0.0

    def __enter__(self) -> _Timer:
        self._started = self._clock()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._observe(self._clock() - self._started)


# ---------------------------------------------------------------- registry


class Registry:
    def __init__(self) -> None:
        self._metrics: dict[str, _Metric] = {}
        self._lock = threading.Lock()

    def register(self, metric: _Metric) -> None:
        with self._lock:
            if metric.name in self._metrics:
                raise MetricError(f"a metric named {metric.name!r} is already registered")
            self._metrics[metric.name] = metric

    def unregister(self, metric: _Metric) -> None:
        with self._lock:
            self._metrics.pop(metric.name, None)

    def get(self, name: str) -> _Metric:
        return self._metrics[name]

    def __iter__(self) -> Iterator[_Metric]:
        with self._lock:
            metrics = sorted(self._metrics.values(), key=lambda m: m.name)
        return iter(metrics)

    def collect(self) -> list[Family]:
        return [metric.collect() for metric in self]

    def sample_value(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        """The value of one exported sample, e.g. ('http_requests_total', {'method': 'GET'}); for tests."""
        wanted = tuple(sorted((labels or {}).items()))
        for family in self.collect():
            for sample in family.samples:
                if family.name + sample.suffix == name and tuple(sorted(sample.labels)) == wanted:
                    return sample.value
        return None


REGISTRY = Registry()


# ---------------------------------------------------------------- metrics


class _Metric:
    kind = "untyped"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (),
                 registry: Registry | None = REGISTRY):
        self.name = _check_name(name)
        self.help = help
        self.label_names = _check_label_names(labels)
        self._children: dict[tuple[str, ...], object] = {}
        self._lock = threading.Lock()
        if not self.label_names:
            self._children[()] = self._new_value()
        if registry is not None:  # registry=None keeps the metric unregistered (tests, libraries)
            registry.register(self)

    def _new_value(self) -> object:
        raise NotImplementedError

    def _child(self, values: tuple[str, ...]) -> object:
        with self._lock:
            child = self._children.get(values)
            if child is None:
                child = self._children[values] = self._new_value()
            return child

    def labels(self, *args: str, **kwargs: str):
        """The child for one combination of label values (by position or by name)."""
        if not self.label_names:
            raise MetricError(f"{self.name} has no labels")
        if args and kwargs:
            raise MetricError("give label values by position or by name, not both")
        if kwargs:
            if set(kwargs) != set(self.label_names):
                raise MetricError(f"{self.name} needs labels {self.label_names}, got {sorted(kwargs)}")
            args = tuple(kwargs[n] for n in self.label_names)
        if len(args) != len(self.label_names):
            raise MetricError(f"{self.name} needs {len(self.label_names)} label values, got {len(args)}")
        return self._child(tuple(str(a) for a in args))

    def remove(self, *values: str) -> None:
        with self._lock:
            self._children.pop(tuple(str(v) for v in values), None)

    def _only(self):
        if self.label_names:
            raise MetricError(f"{self.name} has labels {self.label_names}; use .labels(...)")
        return self._children[()]

    def collect(self) -> Family:
        family = Family(self.name, self.kind, self.help)
        with self._lock:
            children = sorted(self._children.items())
        for values, child in children:
            base = tuple(zip(self.label_names, values))
            for suffix, extra, value in child.samples():  # type: ignore[attr-defined]
                family.samples.append(Sample(suffix, base + extra, value))
        return family


class Counter(_Metric):
    kind = "counter"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (),
                 registry: Registry | None = REGISTRY):
        if name.endswith("_total"):
            name = name[: -len("_total")]
        super().__init__(name, help, labels, registry)

    def _new_value(self) -> _CounterValue:
        return _CounterValue()

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)

    @property
    def value(self) -> float:
        return self._only().value

    def count_exceptions(self, *kinds: type[BaseException]):
        """Decorator: count calls that raise one of `kinds` (any exception by default)."""
        kinds = kinds or (Exception,)

        def decorate(function):
            def wrapper(*args, **kwargs):
                try:
                    return function(*args, **kwargs)
                except kinds:
                    self.inc()
                    raise

            wrapper.__wrapped__ = function
            return wrapper

        return decorate


class Gauge(_Metric):
    kind = "gauge"

    def _new_value(self) -> _GaugeValue:
        return _GaugeValue()

    def set(self, value: float) -> None:
        self._only().set(value)

    def inc(self, amount: float = 1.0) -> None:
        self._only().inc(amount)

    def dec(self, amount: float = 1.0) -> None:
        self._only().dec(amount)

    def set_function(self, function: Callable[[], float]) -> None:
        self._only().set_function(function)

    @property
    def value(self) -> float:
        return self._only().current()

    def track_in_progress(self):
        """Context manager: +1 while the block runs."""
        gauge = self

        class _InProgress:
            def __enter__(self):
                gauge.inc()

            def __exit__(self, *exc_info):
                gauge.dec()

        return _InProgress()


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (), registry: Registry | None = REGISTRY,
                 buckets: Sequence[float] = DEFAULT_BUCKETS, clock: Callable[[], float] = time.perf_counter):
        self.bounds = _check_bucket_bounds(buckets)
        self.clock = clock
        super().__init__(name, help, labels, registry)

    def _new_value(self) -> _HistogramValue:
        return _HistogramValue(self.bounds)

    def observe(self, value: float) -> None:
        self._only().observe(value)

    def time(self) -> _Timer:
        """Context manager observing the block's duration in seconds."""
        return _Timer(self.observe, self.clock)

    def buckets(self) -> list[tuple[float, int]]:
        """(upper bound, cumulative count) pairs, +Inf last."""
        return self._only().cumulative()

    @property
    def count(self) -> int:
        return self._only().count

    @property
    def sum(self) -> float:
        return self._only().sum


class _SummaryValue:
    """Count and sum only (no quantiles): cheap to keep, and aggregatable across instances."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        if math.isnan(value):
            raise MetricError("cannot observe NaN")
        with self._lock:
            self.count += 1
            self.sum += value

    def samples(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        return [("_count", (), float(self.count)), ("_sum", (), self.sum)]


class Summary(_Metric):
    kind = "summary"

    def __init__(self, name: str, help: str, labels: Sequence[str] = (), registry: Registry | None = REGISTRY,
                 clock: Callable[[], float] = time.perf_counter):
        self.clock = clock
        super().__init__(name, help, labels, registry)

    def _new_value(self) -> _SummaryValue:
        return _SummaryValue()

    def observe(self, value: float) -> None:
        self._only().observe(value)

    def time(self) -> _Timer:
        return _Timer(self.observe, self.clock)

    @property
    def count(self) -> int:
        return self._only().count

    @property
    def sum(self) -> float:
        return self._only().sum


class _InfoValue:
    def __init__(self, label_names: tuple[str, ...]) -> None:
        self._label_names = label_names
        self.data: dict[str, str] = {}

    def info(self, data: dict[str, str]) -> None:
        clash = set(data) & set(self._label_names)
        if clash:
            raise MetricError(f"info keys {sorted(clash)} clash with the metric's labels")
        for key in data:
            if not _LABEL_NAME.match(key):
                raise MetricError(f"invalid info key {key!r}")
        self.data = {k: str(v) for k, v in data.items()}

    def samples(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        return [("_info", tuple(sorted(self.data.items())), 1.0)]


class Info(_Metric):
    """Constant key/value facts about the process, exported as `<name>_info{...} 1` (build version, ...)."""

    kind = "info"

    def _new_value(self) -> _InfoValue:
        return _InfoValue(self.label_names)

    def info(self, data: dict[str, str]) -> None:
        self._only().info(data)


class _EnumValue:
    def __init__(self, name: str, states: tuple[str, ...]) -> None:
        self._name = name
        self.states = states
        self.current = states[0]

    def state(self, value: str) -> None:
        if value not in self.states:
            raise MetricError(f"{self._name}: unknown state {value!r}; expected one of {self.states}")
        self.current = value

    def samples(self) -> list[tuple[str, tuple[tuple[str, str], ...], float]]:
        return [("", ((self._name, s),), 1.0 if s == self.current else 0.0) for s in self.states]


class Enum(_Metric):
    """Which of a fixed set of states something is in; one sample per state, 1 for the current one."""

    kind = "stateset"

    def __init__(self, name: str, help: str, states: Sequence[str], labels: Sequence[str] = (),
                 registry: Registry | None = REGISTRY):
        if not states or len(set(states)) != len(states):
            raise MetricError("an Enum needs distinct states")
        if name in labels:
            raise MetricError(f"{name} cannot also be a label of its own Enum")
        self.states = tuple(states)
        super().__init__(name, help, labels, registry)

    def _new_value(self) -> _EnumValue:
        return _EnumValue(self.name, self.states)

    def state(self, value: str) -> None:
        self._only().state(value)

    @property
    def current(self) -> str:
        return self._only().current
