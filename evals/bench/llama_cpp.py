"""llama.cpp on the same GGUF, timed like our engine: prefill tok/s of a prompt and decode ms/token after it.

llama-cpp-python is an optional extra (`pip install 'deltaserve[bench]'`; build flags in docs/benchmarks.md);
without it, or for a model that is not a GGUF file, `open_llama_cpp` returns None and a reason, and the
benchmark prints the column as skipped.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from deltaserve.engine.loader import resolve_source

try:  # optional: the bench extra
    import llama_cpp
except ImportError:  # pragma: no cover - depends on the install
    llama_cpp = None

CONTEXT = 4096  # room for the 2,000-token prompt and the decoded tokens


class LlamaCpp:
    """One llama.cpp model; every measurement starts from an empty KV cache, greedy, batch 1."""

    def __init__(self, gguf: Path, threads: int):
        self.llm = llama_cpp.Llama(model_path=str(gguf), n_ctx=CONTEXT, n_threads=threads,
                                   n_threads_batch=threads, verbose=False)
        self.vocab_size = self.llm.n_vocab()

    def prefill_decode(self, ids: list[int], decode_tokens: int) -> tuple[float, float]:
        """(prefill tok/s, decode ms/token): eval the prompt, then feed back the argmax token by token."""
        llm = self.llm
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(ids)
        t1 = time.perf_counter()
        for _ in range(decode_tokens):
            llm.eval([self.greedy_token()])
        t2 = time.perf_counter()
        return len(ids) / (t1 - t0), 1000 * (t2 - t1) / decode_tokens

    def greedy_token(self) -> int:
        """argmax of the last position's logits (eval keeps no logits of its own without logits_all)."""
        logits = llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
        return int(np.ctypeslib.as_array(logits, shape=(self.vocab_size,)).argmax())

    def close(self) -> None:
        self.llm.close()


def open_llama_cpp(model: str, threads: int) -> tuple[LlamaCpp | None, str]:
    """(runner, "") or (None, why the llama.cpp column is skipped)."""
    if llama_cpp is None:
        return None, "llama_cpp is not installed (pip install 'deltaserve[bench]')"
    source = resolve_source(model)
    if source.suffix != ".gguf":
        return None, f"{model} is not a GGUF file"
    return LlamaCpp(source, threads), ""
