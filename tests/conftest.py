"""Tests never touch a model hub, and run torch single-threaded."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread per test: tiny models gain nothing from more, and on a busy 2-core box spinning
    OpenMP workers slow every op ~10x. The setting is process-wide (a server's worker thread follows it);
    restored after the test."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
