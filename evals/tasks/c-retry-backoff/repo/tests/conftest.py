import pytest


class FakeTime:
    """A clock that only moves when something sleeps."""

    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_time():
    return FakeTime()


class Flaky:
    """Fails `failures` times with `exc`, then returns `value`."""

    def __init__(self, failures, exc=ConnectionError("reset"), value="ok"):
        self.failures = failures
        self.exc = exc
        self.value = value
        self.calls = 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            raise self.exc
        return self.value


@pytest.fixture
def flaky():
    return Flaky
