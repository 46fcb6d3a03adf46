import pytest

from minimetrics import Registry


@pytest.fixture
def registry():
    return Registry()

