"""Bridge between asyncio (the server) and the Engine, which is not thread-safe.

One daemon worker thread owns the Engine and is the only thread that ever calls it (the server reads its
tokenizer on a thread of its own: tokenizing changes nothing in the engine). The event loop talks to
it through a thread-safe command queue (add / abort / stats / stop); the worker calls `step()` while any
request is unfinished and blocks on the queue when idle. New requests join the running batch between steps
(continuous batching). Each RequestOutput goes to its request's asyncio.Queue via `call_soon_threadsafe`.

Failures stay local: a request the engine rejects raises in its caller only; a request the engine fails
finishes with finish_reason "error"; if `step()` itself raises, every in-flight request gets that error
(and is aborted so its blocks are freed) and the worker keeps serving new requests.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import logging
import queue
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from deltaserve.errors import EngineOverloadedError, EngineStepError

log = logging.getLogger("deltaserve.async_engine")

@dataclass
class _Add:
    prompt: Any  # what Engine.add_request takes: token ids (or a text, tokenized there)
    params: Any
    cache_salt: str | None
    stream: RequestStream
    accepted: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


@dataclass
class _Abort:
    request_id: str


@dataclass
class _Stats:
    reply: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)


@dataclass
class _Stop:
    pass


class RequestStream:
    """The outputs of one request, in order, as an async iterator; `abort()` stops it early."""

    def __init__(self, owner: AsyncEngine, loop: asyncio.AbstractEventLoop) -> None:
        self._owner = owner
        self._loop = loop
        self._queue: asyncio.Queue = asyncio.Queue()
        self.request_id: str | None = None
        self.finished = False
        self.last: Any = None  # the last RequestOutput seen

    async def __aiter__(self) -> AsyncIterator[Any]:
        while not self.finished:
            item = await self._queue.get()
            if isinstance(item, BaseException):
                self.finished = True
                raise item
            self.last = item
            if item.finished:
                self.finished = True
            yield item

    def abort(self) -> None:
        """Abort the request unless it already finished; its KV blocks are freed by the worker at once."""
        if not self.finished and self.request_id is not None:
            self.finished = True
            self._owner._commands.put(_Abort(self.request_id))


class AsyncEngine:
    """Owns an Engine on a worker thread; use from one or more asyncio event loops."""

    def __init__(self, engine: Any, max_waiting: int = 256) -> None:
        self.engine = engine
        # Requests beyond what one batch holds are "waiting"; past `max_waiting` of them we refuse (503).
        self.batch_capacity = int(getattr(engine.config, "max_num_seqs", 0) or 0)
        self.max_waiting = max_waiting
        self.latest_stats: Any = None  # snapshot published by the worker after every step
        self.step_failures = 0
        self._commands: queue.Queue = queue.Queue()
        self._streams: dict[str, RequestStream] = {}  # worker-thread only
        self._lock = threading.Lock()
        self._unfinished = 0
        self._thread = threading.Thread(target=self._run, name="deltaserve-engine", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ event-loop side

    @property
    def num_unfinished(self) -> int:
        return self._unfinished

    @property
    def worker_alive(self) -> bool:
        """False once the worker thread has stopped (shutdown, or a crash it could not survive)."""
        return self._thread.is_alive()

    async def add_request(self, prompt: Any, params: Any, cache_salt: str | None = None) -> RequestStream:
        """Submit a request (Engine.add_request's arguments); raises what the engine raised, or
        EngineOverloadedError. Tokenize long texts before: the engine thread serves every request."""
        with self._lock:
            if self._unfinished >= self.batch_capacity + self.max_waiting:
                raise EngineOverloadedError(
                    f"server overloaded: {self._unfinished} requests in flight "
                    f"({self.max_waiting} may wait beyond a batch of {self.batch_capacity}); retry later"
                )
            self._unfinished += 1
        stream = RequestStream(self, asyncio.get_running_loop())
        command = _Add(prompt, params, cache_salt, stream)
        self._commands.put(command)
        try:
            await asyncio.wrap_future(command.accepted)
        except asyncio.CancelledError:  # the caller went away: abort the request once it is in
            command.accepted.add_done_callback(
                lambda f: stream.abort() if not f.cancelled() and f.exception() is None else None)
            raise
        return stream

    async def stats(self) -> Any:
        """Fresh engine stats, read on the worker thread (waits for the current step to end)."""
        command = _Stats()
        self._commands.put(command)
        return await asyncio.wrap_future(command.reply)

    def shutdown(self, timeout: float = 10.0) -> None:
        self._commands.put(_Stop())
        self._thread.join(timeout)

    # ------------------------------------------------------------ worker thread

    def _run(self) -> None:
        idle = True
        while True:
            try:
                command = self._commands.get(block=idle)
            except queue.Empty:
                command = None
            while command is not None:
                if isinstance(command, _Stop):
                    self._stop()
                    return
                try:
                    self._handle(command)
                except Exception:  # a bug here must not stop the only thread that serves requests
                    log.exception("failed to handle %r", command)
                try:
                    command = self._commands.get_nowait()
                except queue.Empty:
                    command = None
            idle = not self._has_work()
            if not idle:
                idle = not self._step()
            self._publish_stats()

    def _has_work(self) -> bool:
        try:
            return bool(self.engine.has_unfinished())
        except Exception:  # a broken engine must not kill the worker
            log.exception("engine.has_unfinished() failed")
            return False

    def _handle(self, command: Any) -> None:
        if isinstance(command, _Add):
            self._add(command)
        elif isinstance(command, _Abort):
            self._abort(command.request_id)
        elif isinstance(command, _Stats) and command.reply.set_running_or_notify_cancel():
            try:
                command.reply.set_result(self.engine.stats())
            except Exception as exc:
                command.reply.set_exception(exc)

    def _add(self, command: _Add) -> None:
        if not command.accepted.set_running_or_notify_cancel():  # the caller stopped waiting
            self._finish_one()
            return
        try:
            salt = command.cache_salt
            request_id = self.engine.add_request(command.prompt, command.params, cache_salt=salt)
        except BaseException as exc:
            self._finish_one()
            command.accepted.set_exception(exc)
            return
        command.stream.request_id = request_id
        self._streams[request_id] = command.stream
        command.accepted.set_result(request_id)

    def _abort(self, request_id: str) -> None:
        stream = self._streams.pop(request_id, None)
        if stream is None:
            return  # already finished
        self._finish_one()
        try:
            self.engine.abort(request_id)
        except Exception:
            log.exception("engine.abort(%s) failed", request_id)

    def _step(self) -> bool:
        """One engine step; returns False when the step failed (the worker then waits for new commands)."""
        try:
            outputs = self.engine.step()
        except Exception as exc:
            self.step_failures += 1
            log.exception("engine.step() failed; failing the %d requests in flight", len(self._streams))
            self._fail_all(EngineStepError(f"engine step failed: {type(exc).__name__}: {exc}"))
            return False
        deliveries: dict[asyncio.AbstractEventLoop, list] = {}
        for out in outputs:
            stream = self._streams.get(out.request_id)
            if stream is None:
                continue  # aborted by its client; nobody is listening
            if out.finished:
                del self._streams[out.request_id]
                self._finish_one()
            # A shallow copy: the consumer runs on another thread while the engine keeps updating its own.
            deliveries.setdefault(stream._loop, []).append((stream._queue, copy.copy(out)))
        for loop, items in deliveries.items():
            _deliver(loop, items)
        return True

    def _fail_all(self, error: BaseException) -> None:
        streams, self._streams = self._streams, {}
        deliveries: dict[asyncio.AbstractEventLoop, list] = {}
        for request_id, stream in streams.items():
            self._finish_one()
            try:
                self.engine.abort(request_id)  # free its blocks even though the step loop failed
            except Exception:
                log.exception("engine.abort(%s) failed", request_id)
            deliveries.setdefault(stream._loop, []).append((stream._queue, error))
        for loop, items in deliveries.items():
            _deliver(loop, items)

    def _stop(self) -> None:
        error = EngineStepError("server is shutting down")
        self._fail_all(error)
        while True:  # answer whatever arrived after the stop so no caller waits forever
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            if isinstance(command, _Add) and command.accepted.set_running_or_notify_cancel():
                self._finish_one()
                command.accepted.set_exception(error)
            elif isinstance(command, _Stats) and command.reply.set_running_or_notify_cancel():
                command.reply.set_exception(error)

    def _finish_one(self) -> None:
        with self._lock:
            self._unfinished -= 1

    def _publish_stats(self) -> None:
        try:
            self.latest_stats = self.engine.stats()
        except Exception:
            log.exception("engine.stats() failed")


def _put_all(items: list) -> None:
    for q, item in items:
        q.put_nowait(item)


def _deliver(loop: asyncio.AbstractEventLoop, items: list) -> None:
    try:
        loop.call_soon_threadsafe(_put_all, items)
    except RuntimeError:
        pass  # that event loop is closed: its clients are gone
