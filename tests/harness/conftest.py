import os
import sys

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch prices at import

TEST_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider"
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def test_cmd():
    return TEST_CMD


@pytest.fixture
def quick_test_cmd():
    """The same check without pytest's start-up cost, for tests about the loop rather than the test runner."""
    return f'{sys.executable} -c "from calc import add; assert add(2, 3) == 5"'


@pytest.fixture
def project(tmp_path):
    """A tiny project with one seeded bug and the test that catches it."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(BUGGY)
    (root / "test_calc.py").write_text(TEST)
    return root
