"""Building an engine on a thread that then ends, so that its CPU work leaves no OpenMP thread pool behind.

GNU OpenMP (torch's on Linux) gives each thread that runs a parallel region a pool of worker threads of its
own, kept until that thread ends. Once more threads sit in pools than the machine has CPUs, every pool's
workers stop spinning between parallel regions and sleep, and each region then pays ~100 us to wake them.
A server that loaded its model on the main thread and stepped it on its worker thread had two pools:
SmolLM2-135M decoded at 30 ms a token there against 11 ms on the main thread (2 threads, 2-core EPYC).
Loading on a thread that ends leaves the pool to whichever thread steps the engine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def on_passing_thread(build: Callable[[], T], name: str = "deltaserve-load") -> T:
    """build() run on a thread of its own that ends before this returns; what it raises is raised here."""
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(build())
        except BaseException as exc:  # handed to the caller's thread, which raises it
            failure.append(exc)

    # daemon: a Ctrl-C in the caller's join does not wait for the load to finish
    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
