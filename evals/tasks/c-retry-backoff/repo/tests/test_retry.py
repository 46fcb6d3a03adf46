import pytest

from retrykit import RetryError, Retrying, constant, exponential, retry


def policy(fake_time, **kwargs):
    return Retrying(sleep=fake_time.sleep, clock=fake_time.clock, **kwargs)


def test_success_needs_no_retry(fake_time, flaky):
    fn = flaky(0)
    assert policy(fake_time).call(fn) == "ok"
    assert fn.calls == 1 and fake_time.sleeps == []


def test_retries_until_success_with_exponential_pauses(fake_time, flaky):
    fn = flaky(2)
    assert policy(fake_time, max_attempts=5, wait=exponential(1)).call(fn) == "ok"
    assert fn.calls == 3
    assert fake_time.sleeps == [1.0, 2.0]


def test_max_attempts_counts_every_call(fake_time, flaky):
    fn = flaky(10)
    with pytest.raises(RetryError) as info:
        policy(fake_time, max_attempts=3, wait=exponential(1)).call(fn)
    assert fn.calls == 3
    assert info.value.attempts == 3
    assert fake_time.sleeps == [1.0, 2.0]  # no pause after the last attempt
    assert isinstance(info.value.last_exception, ConnectionError)


def test_single_attempt_never_sleeps(fake_time, flaky):
    fn = flaky(1)
    with pytest.raises(RetryError):
        policy(fake_time, max_attempts=1).call(fn)
    assert fn.calls == 1 and fake_time.sleeps == []


def test_on_retry_sees_each_pause(fake_time, flaky):
    seen = []
    fn = flaky(5)
    with pytest.raises(RetryError):
        policy(fake_time, max_attempts=3, wait=constant(2), on_retry=seen.append).call(fn)
    assert [(s.attempt, s.delay, s.elapsed) for s in seen] == [(1, 2, 0), (2, 2, 2)]


def test_other_exceptions_are_not_retried(fake_time, flaky):
    fn = flaky(1, exc=KeyError("x"))
    with pytest.raises(KeyError):
        policy(fake_time, retry_on=(ConnectionError,)).call(fn)
    assert fn.calls == 1


def test_reraise_gives_the_original_exception(fake_time, flaky):
    fn = flaky(9, exc=TimeoutError("slow"))
    with pytest.raises(TimeoutError):
        policy(fake_time, max_attempts=2, reraise=True, wait=constant(0)).call(fn)
    assert fn.calls == 2


def test_deadline_stops_before_a_pause_that_would_pass_it(fake_time, flaky):
    fn = flaky(10)
    with pytest.raises(RetryError):
        policy(fake_time, max_attempts=10, wait=constant(4), deadline=10).call(fn)
    assert fake_time.sleeps == [4, 4]  # a third pause would end at 12 s
    assert fn.calls == 3


def test_retry_on_result(fake_time):
    answers = iter([None, None, 42])
    value = policy(fake_time, retry_if_result=lambda r: r is None, wait=constant(1)).call(lambda: next(answers))
    assert value == 42 and fake_time.sleeps == [1, 1]


def test_rejected_results_give_up_with_the_last_one(fake_time):
    with pytest.raises(RetryError) as info:
        policy(fake_time, max_attempts=2, retry_if_result=lambda r: r < 0, wait=constant(0)).call(lambda: -1)
    assert info.value.last_result == -1 and info.value.last_exception is None


def test_decorator_passes_arguments(fake_time, flaky):
    fn = flaky(1)

    @retry(max_attempts=2, wait=constant(0), sleep=fake_time.sleep, clock=fake_time.clock)
    def fetch(url, timeout=1):
        return fn(url, timeout=timeout)

    assert fetch("http://x", timeout=3) == "ok"
    assert fetch.__name__ == "fetch" and fetch.retrying.max_attempts == 2


def test_invalid_policy():
    with pytest.raises(ValueError):
        Retrying(max_attempts=0)
    with pytest.raises(ValueError):
        Retrying(deadline=0)
