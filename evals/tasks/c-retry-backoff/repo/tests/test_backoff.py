import random

import pytest

from retrykit import constant, exponential, jittered, linear


def test_exponential_starts_at_base():
    wait = exponential(1.0)
    assert [wait(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]


def test_exponential_factor_and_cap():
    wait = exponential(0.5, factor=3, max_delay=10)
    assert [wait(n) for n in (1, 2, 3, 4)] == [0.5, 1.5, 4.5, 10]


def test_linear_and_constant():
    assert [linear(1, 2)(n) for n in (1, 2, 3)] == [1, 3, 5]
    assert linear(1, 2, max_delay=4)(5) == 4
    assert constant(0.25)(7) == 0.25


def test_jitter_stays_in_range():
    wait = jittered(constant(10), spread=0.2, rng=random.Random(7))
    delays = [wait(1) for _ in range(50)]
    assert all(8 <= d <= 12 for d in delays)
    assert len(set(delays)) > 1


@pytest.mark.parametrize("make", [lambda: exponential(0), lambda: exponential(1, factor=0.5),
                                  lambda: linear(-1, 1), lambda: constant(-1), lambda: jittered(constant(1), 2)])
def test_bad_parameters(make):
    with pytest.raises(ValueError):
        make()


def test_attempt_zero_is_rejected():
    with pytest.raises(ValueError):
        exponential()(0)
