"""Engine work on threads that end, so that its CPU work leaves no OpenMP thread pool behind.

GNU OpenMP (torch's on Linux) gives each thread that runs a parallel region a pool of worker threads of its
own, kept until that thread ends. Once more threads sit in pools than the machine has CPUs, every pool's
workers stop spinning between parallel regions and sleep, and each region then pays ~100 us to wake them.
A server that loaded its model on the main thread and stepped it on its worker thread had two pools:
SmolLM2-135M decoded at 30 ms a token there against 11 ms on the main thread (2 threads, 2-core EPYC).
Loading on a thread that ends leaves the pool to whichever thread steps the engine; an asyncio caller's
requests each step it on a thread of their own that ends with the request (an executor's threads would
persist, one pool each).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TypeVar

T = TypeVar("T")
_END = object()  # the producer's last item: its iterator is exhausted, stopped or failed


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


async def awaited_on_passing_thread(work: Callable[[], T], name: str = "deltaserve-request") -> T:
    """work() on a thread of its own that ends with it, awaited without blocking the event loop (the
    executor thread that waits for it runs no torch op, so it keeps no pool)."""
    return await asyncio.to_thread(on_passing_thread, work, name)


async def iterated_on_passing_thread(make: Callable[[], Iterator[T]],
                                     name: str = "deltaserve-request") -> AsyncIterator[T]:
    """The items of make()'s iterator, produced on a thread of its own that ends with the iterator. The
    producer does not wait for the reader; a reader that stops has the iterator closed on the producer's
    thread (for an engine stream: its request aborted), and waits for that."""
    handoff: queue.Queue = queue.Queue()
    stop = threading.Event()

    def produce() -> None:
        failure = None
        try:
            items = make()
            try:
                for item in items:
                    handoff.put((item, None))
                    if stop.is_set():
                        break
            finally:
                close = getattr(items, "close", None)
                if close is not None:
                    close()
        except BaseException as exc:  # raised in the reader
            failure = exc
        handoff.put((_END, failure))

    thread = threading.Thread(target=produce, name=name, daemon=True)
    thread.start()
    try:
        while True:
            item, failure = await asyncio.to_thread(handoff.get)
            if failure is not None:
                raise failure
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        await asyncio.to_thread(thread.join)
