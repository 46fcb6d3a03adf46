"""EngineConfig.compile_decode="auto": the batch-1 decode step compiled on a thread of its own while the
engine decodes eagerly, then kept only if it wins a timed trial.

A compile takes tens of seconds on 2 cores (a few with inductor's cache warm). On the step thread it would
stall the first request; a server should start and answer as soon without it. So the compile traces a
scratch step: one token in the pool's scratch block (KVCache.scratch_slot, never handed to a sequence), so no
sequence's K/V is written, while the engine's own steps go on eagerly. Once it is ready, the next
TRIAL_STEPS steps it accepts alternate compiled and eager, each timed on the step thread, and the compiled
step is kept only if its median time is lower. Whether it pays depends on the CPU, the model and the threads
(SmolLM2-135M on a 2-core EPYC: ~15% less time per token; the 1.5B model: ~20%; docs/benchmarks.md), so it
is measured where it runs rather than assumed.

The step thread never compiles: a step whose guards the compiled code does not pass runs eagerly
(torch.compiler's "eager_on_recompile" stance).

A compile still running when the interpreter exits (a server stopped in its first seconds) is stopped first:
at finalization Python ends a daemon thread that wants the GIL back with pthread_exit, and unwinding through
torch's C++ frames then aborts the process ("terminate called without an active exception").
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import statistics
import sys
import threading
import time
import weakref
from collections.abc import Iterator
from typing import Literal

import torch

from deltaserve.engine.compiled_decode import CompiledDecode
from deltaserve.engine.forward_batch import ForwardBatch
from deltaserve.engine.kv_cache import KVCache

log = logging.getLogger(__name__)

Phase = Literal["compiling", "trial", "adopted", "rejected", "failed"]
TRIAL_STEPS = 16  # accepted steps after the compile: half compiled, half eager
# The compile goes on only once no step has started for IDLE_S, so it takes the engine's idle time (e.g.
# while an agent runs its tests), checked every CALLS_BETWEEN_WAITS Python calls of the compile
IDLE_S = 0.25
CALLS_BETWEEN_WAITS = 64
EXIT_WAIT_S = 2.0  # how long exit waits for a stopped compile: a torch call in flight ends well within it
# A step whose guards the compiled code does not pass runs eagerly instead of compiling on the step thread
# (the tests make it fail instead, to see that live steps pass the scratch step's guards).
STEP_STANCE = "eager_on_recompile"


_compiling: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@atexit.register
def _stop_compiles() -> None:
    """SystemExit raised in each compile still running, at its next Python line (dynamo and inductor are
    mostly Python); a compile waiting on the C++ compiler, in no C++ frame of torch's, may exit as is."""
    for thread in list(_compiling):
        deadline = time.monotonic() + EXIT_WAIT_S
        while thread.is_alive() and thread.ident is not None and time.monotonic() < deadline:
            # again until it ends: a weakref callback it happens to be in swallows the exception
            stop = ctypes.py_object(SystemExit)
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), stop)
            thread.join(0.05)


class BackgroundCompiledDecode:
    """CompiledDecode's counterpart for compile_decode="auto" (the same accepts / run)."""

    def __init__(self, model, kv: KVCache, scratch: ForwardBatch):
        self.compiled = CompiledDecode(model)
        self.model = model
        self.phase: Phase = "compiling"
        self.trial: dict[bool, list[float]] = {True: [], False: []}  # compiled? -> seconds a step
        self.in_step, self.last_step = False, 0.0  # a step in flight; when the last one ended (monotonic)
        self._calls = 0
        self.thread = threading.Thread(target=self._compile, args=(scratch, kv), daemon=True,
                                       name="deltaserve-compile-decode")
        _compiling.add(self.thread)
        self.thread.start()

    def _compile(self, scratch: ForwardBatch, kv: KVCache) -> None:
        started = time.perf_counter()
        if sys.platform == "linux":  # this thread only, and the C++ compiler runs it starts
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        sys.settrace(self._wait_while_stepping)  # this thread only
        try:
            with torch.inference_mode():
                ok = self.compiled.run(scratch, kv) is not None  # a failure is logged by CompiledDecode
        finally:
            sys.settrace(None)
        self.phase = "trial" if ok else "failed"
        if ok:
            log.info("decode step compiled in %.1f s (in the background); timing it against eager steps",
                     time.perf_counter() - started)

    def _wait_while_stepping(self, frame, event, arg) -> None:
        """Called at each Python call of the compile: now and then, waits while the engine steps. Dynamo and
        inductor are Python, so they would hold the GIL that each of the step's torch calls gives up and takes
        back: SmolLM2-135M decoded at 150-300 ms a token beside a compile, against 16 alone (2-core Xeon)."""
        self._calls += 1
        if self._calls % CALLS_BETWEEN_WAITS == 0:
            while self.in_step or time.monotonic() - self.last_step < IDLE_S:
                time.sleep(IDLE_S)

    def stepping(self) -> contextlib.AbstractContextManager:
        """Around each step's forward (ModelRunner.logits): while the compile runs, it waits meanwhile and
        IDLE_S after; once it is done, nothing is added to the step."""
        return self._marked_step() if self.phase == "compiling" else contextlib.nullcontext()

    @contextlib.contextmanager
    def _marked_step(self) -> Iterator[None]:
        self.in_step = True
        try:
            yield
        finally:
            self.in_step, self.last_step = False, time.monotonic()

    def accepts(self, batch: ForwardBatch) -> bool:
        return self.phase in ("trial", "adopted") and self.compiled.accepts(batch)

    def run(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor | None:
        """The step's logits; None when the compiled step failed (the caller runs the eager forward)."""
        if self.phase == "adopted":
            return self._compiled(batch, kv)
        use_compiled = len(self.trial[True]) <= len(self.trial[False])
        started = time.perf_counter()
        logits = self._compiled(batch, kv) if use_compiled else self.model.forward(batch, kv)
        if logits is not None:
            self.trial[use_compiled].append(time.perf_counter() - started)  # the CPU is done: no sync
            if len(self.trial[True]) + len(self.trial[False]) >= TRIAL_STEPS:
                self._decide()
        return logits

    def _compiled(self, batch: ForwardBatch, kv: KVCache) -> torch.Tensor | None:
        with torch.compiler.set_stance(STEP_STANCE):
            logits = self.compiled.run(batch, kv)
        if logits is None:
            self.phase = "failed"
        return logits

    def _decide(self) -> None:
        compiled, eager = (statistics.median(self.trial[c]) * 1e3 for c in (True, False))
        self.phase = "adopted" if compiled < eager else "rejected"
        log.info("compiled decode step %s: %.2f ms against %.2f eager (median of %d steps each)",
                 self.phase, compiled, eager, len(self.trial[True]))
