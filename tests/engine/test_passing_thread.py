"""Engine.from_pretrained builds on a thread that ends (engine/passing_thread.py): the caller's thread is left
without an OpenMP pool, so a server's worker thread that steps the engine keeps the only one."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest
import torch

from deltaserve.engine.passing_thread import (
    awaited_on_passing_thread,
    iterated_on_passing_thread,
    on_passing_thread,
)

# In a fresh process (this one's main thread has run parallel ops already): build an engine with 2 threads,
# then count the threads the main thread's first parallel op starts.
POOL_PROBE = """
import os, sys, time, torch
from deltaserve.engine import Engine

def settled():  # the load thread's pool workers end just after it does
    count, deadline = len(os.listdir("/proc/self/task")), time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = len(os.listdir("/proc/self/task"))
        if now == count:
            return now
        count = now
    return count

eng = Engine.from_pretrained(sys.argv[1], num_threads=2, num_blocks=32, speculative="off")
before = settled()
torch.ones(2**22).sum()  # a parallel region on the main thread
print(settled() - before)
"""


def test_the_callers_thread_has_no_openmp_pool_after_a_build(tiny_llama):
    if not os.path.isdir("/proc/self/task") or not torch.backends.openmp.is_available():
        pytest.skip("needs Linux's /proc and an OpenMP torch")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "2"}
    out = subprocess.run([sys.executable, "-c", POOL_PROBE, str(tiny_llama)], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    # one new worker: the main thread's first parallel region made its pool, so the build had left none
    assert out.stdout.split()[-1] == "1", out.stdout


def test_it_returns_what_the_build_returns_from_another_thread():
    caller = threading.get_ident()
    result = on_passing_thread(lambda: (threading.get_ident(), threading.current_thread().name))
    assert result[0] != caller and result[1] == "deltaserve-load"


def test_what_the_build_raises_is_raised_in_the_caller():
    class BadModel(Exception):
        pass

    def build():
        time.sleep(0.01)
        raise BadModel("no such model")

    with pytest.raises(BadModel, match="no such model"):
        on_passing_thread(build)


def test_an_iterator_on_a_passing_thread_hands_over_its_items_and_what_it_raises():
    def items():
        yield threading.current_thread().name
        yield 2
        raise ValueError("bad request")

    async def read():
        got = []
        with pytest.raises(ValueError, match="bad request"):
            async for item in iterated_on_passing_thread(items):
                got.append(item)
        return got

    assert asyncio.run(read()) == ["deltaserve-request", 2]


def test_a_reader_that_stops_has_the_iterator_closed_on_its_own_thread():
    closed_on: list[str] = []
    producer_may_go = threading.Event()

    def items():
        try:
            for i in range(1000):
                yield i
                producer_may_go.wait(5)
        finally:
            closed_on.append(threading.current_thread().name)

    async def read_one():
        stream = iterated_on_passing_thread(items)
        first = await stream.__anext__()
        producer_may_go.set()
        await stream.aclose()  # returns once the producer has closed its iterator and ended
        return first

    assert asyncio.run(read_one()) == 0
    assert closed_on == ["deltaserve-request"]


def test_awaited_work_runs_on_a_thread_that_ends():
    threads = []

    def work():
        threads.append(threading.current_thread())
        return 7

    assert asyncio.run(awaited_on_passing_thread(work)) == 7
    assert threads[0].name == "deltaserve-request" and not threads[0].is_alive()
