"""Tests never touch a model hub and run torch single-threaded; the tiny models and the seeded-bug project
every part's tests share."""

import os
import sys

import pytest
import torch
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch prices at import

from deltaserve.testing.tiny_model import TINY_ARCHS, make_tiny_model_dir  # noqa: E402  (after the env)

# no time limit per example: a timed assertion fails on a busy machine, not on a bug (a niced clean-clone run
# beside two model runs failed test_free_blocks' property on hypothesis's 200 ms deadline)
settings.register_profile("deltaserve", deadline=None)
settings.load_profile("deltaserve")

TEST_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider"
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread per test: tiny models gain nothing from more, and on a busy 2-core box spinning
    OpenMP workers slow every op ~10x. The setting is process-wide (a server's worker thread follows it);
    restored after the test."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_model_dirs(tmp_path_factory):
    """One tiny random-weight checkpoint per architecture (arch -> path), built once per session.
    Tests that need another variant (untied head, small vocabulary) build it with make_tiny_model_dir."""
    root = tmp_path_factory.mktemp("tiny-models")
    return {arch: make_tiny_model_dir(root / arch, arch) for arch in TINY_ARCHS}


@pytest.fixture(scope="session")
def tiny_llama(tiny_model_dirs):
    return tiny_model_dirs["llama"]


@pytest.fixture(scope="session")
def tiny_llama_8k(tmp_path_factory):
    """The tiny llama with SmolLM2's 8k context, for prompts that hold whole task files (eval replays)."""
    return make_tiny_model_dir(tmp_path_factory.mktemp("tiny-8k") / "llama", max_position_embeddings=8192)


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
