"""Batch-1 decode through torch.compile (EngineConfig.compile_decode): the compiled step's logits against the
eager forward's on the same inputs, one compile for every context, the steps it does not take, and "auto":
compiled in the background, then kept only if it wins its trial."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
import torch

from deltaserve.engine import EngineConfig, SamplingParams
from deltaserve.engine import background_compile as bc
from deltaserve.engine import compiled_decode as cd
from deltaserve.engine.forward_batch import Span
from deltaserve.engine.model_runner import ModelRunner

GREEDY = SamplingParams(max_tokens=6, temperature=0.0, ignore_eos=True)
# inductor compiles its CPU kernels with the system's C++ compiler (without one the engine stays eager)
needs_compiler = pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None,
                                    reason="no C++ compiler for inductor")


def _checked(eng):
    """Each compiled step also runs the eager forward on the same batch; (compiled, eager) logits recorded."""
    compiled, pairs = eng.runner.compiled, []
    run = compiled.run

    def both(batch, kv):
        got = run(batch, kv)
        pairs.append((got, eng.model.forward(batch, kv)))  # rewrites the same K/V slots with the same values
        return got

    compiled.run = both
    return pairs


@needs_compiler
def test_compiled_decode_steps_give_the_eager_logits(make_engine):
    # w8a8: fbgemm's packed weights reach the graph through the opaque linear op
    eng = make_engine(quant="w8a8", compile_decode="on")
    pairs = _checked(eng)
    out = eng.generate([list(range(3, 40))], GREEDY)[0]
    assert not eng.runner.compiled.failed
    assert len(pairs) == len(out.token_ids) - 1  # every decode step after the prefill's token
    for got, want in pairs:
        assert got is not None
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


@needs_compiler
def test_one_compile_serves_growing_contexts_and_other_requests(make_engine):
    eng = make_engine(quant="w8a8", compile_decode="on", enable_prefix_caching=False)
    eng.generate([list(range(5, 12))], GREEDY)  # compiles
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    eng.generate([list(range(20, 60)), list(range(7, 9))], SamplingParams(max_tokens=20, ignore_eos=True))
    eng.generate([list(range(9, 30))], GREEDY)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs, "a new context recompiled"


@needs_compiler
def test_the_servers_worker_thread_compiles_and_runs_it(make_engine):
    # the server steps its engine on a thread of its own (engine/async_engine.py)
    eng = make_engine(quant="w8a8", compile_decode="on")
    pairs, outs = _checked(eng), []
    worker = threading.Thread(target=lambda: outs.extend(eng.generate([list(range(4, 30))], GREEDY)))
    worker.start()
    worker.join()
    assert len(outs[0].token_ids) == GREEDY.max_tokens
    assert pairs and not eng.runner.compiled.failed
    for got, want in pairs:
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_steps_it_cannot_take_and_a_failed_compile_run_eagerly(make_engine):
    eng = make_engine(quant="w8a8", compile_decode="on", max_num_seqs=2)
    runner, compiled = eng.runner, eng.runner.compiled
    assert compiled.accepts(runner.prepare([Span([1], 5, [0], [0])]))
    assert not compiled.accepts(runner.prepare([Span([1, 2, 3], 0, [0], [2])]))  # a prefill chunk
    assert not compiled.accepts(runner.prepare([Span([1, 2], 5, [0], [0, 1])]))  # a verify span
    assert not compiled.accepts(runner.prepare([Span([1], 5, [0], [0]), Span([2], 3, [1], [0])]))

    want = make_engine(quant="w8a8").generate([list(range(3, 20))], GREEDY)[0].token_ids

    def broken(batch, kv):
        raise RuntimeError("no compiler here")

    compiled.forward = broken
    assert eng.generate([list(range(3, 20))], GREEDY)[0].token_ids == want
    assert compiled.failed


def test_the_linear_registry_lets_a_dropped_model_go(make_engine):
    eng = make_engine(compile_decode="on")
    handles = [layer.qkv.handle for layer in eng.model.layers]
    assert all(h in cd._LINEARS for h in handles)
    eng.model.layers = None  # the layers' linears have no other owner
    gc.collect()
    assert not any(h in cd._LINEARS for h in handles)


def test_it_is_refused_off_cpu():
    class OnCuda:  # a model that says it lives on CUDA: the check comes before anything runs there
        device = torch.device("cuda")

    with pytest.raises(ValueError, match="CUDA graphs"):
        ModelRunner(OnCuda(), None, 16, compile_decode="on")


def _slowed(fn, seconds: float):
    def slow(*args):
        time.sleep(seconds)
        return fn(*args)
    return slow


def _background(eng) -> bc.BackgroundCompiledDecode:
    compiled = eng.runner.compiled
    assert isinstance(compiled, bc.BackgroundCompiledDecode)
    compiled.thread.join(timeout=300)
    assert compiled.phase == "trial"
    return compiled


@needs_compiler
def test_auto_compiles_off_the_step_thread_without_touching_a_sequences_kv(make_engine, monkeypatch):
    monkeypatch.setattr(bc, "STEP_STANCE", "fail_on_recompile")  # a live step the compiled code refuses fails
    eng = make_engine(quant="w8a8", compile_decode="auto")
    compiled = eng.runner.compiled
    assert compiled.thread.name == "deltaserve-compile-decode"
    assert not compiled.accepts(eng.runner.prepare([Span([1], 5, [0], [0])]))  # eager while it compiles
    _background(eng)
    # the compile traced a step in the scratch block: every block a sequence can own is still zero
    assert not eng.kv.k_blocks[:, :, : eng.kv.num_blocks].any() and not eng.kv.v_blocks[:, :, :-1].any()
    assert eng.kv.k_blocks[:, :, -1].any()
    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    want = make_engine(quant="w8a8").generate([list(range(3, 40))], GREEDY)[0].token_ids
    assert eng.generate([list(range(3, 40))], GREEDY)[0].token_ids == want
    decode_steps = GREEDY.max_tokens - 1  # the first token comes from the prefill
    assert len(compiled.trial[True]) == decode_steps - decode_steps // 2  # taking turns, compiled first
    assert len(compiled.trial[False]) == decode_steps // 2
    compiled.phase = "adopted"
    for block in (0, 1, eng.kv.num_blocks - 1):  # contexts from the pool's first slot to its last block
        eng.runner.logits([Span([1], 9, [block], [0])])
    assert compiled.phase == "adopted", "a live step did not pass the compiled step's guards"
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs, "the live steps recompiled"


@needs_compiler
def test_auto_compiles_only_while_the_engine_is_idle(make_engine):
    eng = make_engine(quant="w8a8", compile_decode="auto")
    compiled = eng.runner.compiled
    with compiled.stepping():  # a long step: the compile parks at its next check
        time.sleep(0.5)
        parked = compiled._calls
        time.sleep(1.0)
        assert compiled._calls == parked and compiled.phase == "compiling"
    _background(eng)  # and goes on once the step is over
    assert compiled._calls > parked


@needs_compiler
@pytest.mark.parametrize(("slow_side", "kept"), [("compiled", "rejected"), ("eager", "adopted")])
def test_auto_keeps_the_compiled_step_only_when_it_is_faster(make_engine, slow_side, kept):
    params = SamplingParams(max_tokens=bc.TRIAL_STEPS + 8, temperature=0.0, ignore_eos=True)
    eng = make_engine(quant="w8a8", compile_decode="auto")
    compiled = _background(eng)
    if slow_side == "compiled":
        compiled.compiled.forward = _slowed(compiled.compiled.forward, 0.02)
    else:  # the eager forward the trial times (the compiled one was made from it before)
        eng.model._forward = _slowed(eng.model._forward, 0.02)
    calls = []
    forward = compiled.compiled.forward
    compiled.compiled.forward = lambda *args: calls.append(1) or forward(*args)
    eng.generate([list(range(3, 30))], params)
    assert compiled.phase == kept
    assert len(compiled.trial[True]) == len(compiled.trial[False]) == bc.TRIAL_STEPS // 2
    after_trial = params.max_tokens - 1 - bc.TRIAL_STEPS
    assert len(calls) == bc.TRIAL_STEPS // 2 + (after_trial if kept == "adopted" else 0)


def test_a_boolean_compile_decode_still_means_on_or_off():
    assert EngineConfig(compile_decode=True).compile_decode == "on"
    assert EngineConfig(compile_decode=False).compile_decode == "off"


def test_auto_is_off_for_deterministic_attention(make_engine):
    assert make_engine(deterministic=True, compile_decode="auto").runner.compiled is None


# In a fresh process: exit while the background compile is inside inductor. An exit hook registered before
# the engine's (so it runs after them) reports whether the compile thread was still running at that point.
EXIT_PROBE = """
import atexit, sys, threading, time
atexit.register(lambda: print("compile running at exit:", any(
    t.name == "deltaserve-compile-decode" and t.is_alive() for t in threading.enumerate()), flush=True))
from deltaserve.engine import Engine
eng = Engine.from_pretrained(sys.argv[1], compile_decode="auto", num_blocks=32, dtype="float32")
thread = eng.runner.compiled.thread

def in_inductor():
    frame = sys._current_frames().get(thread.ident)
    while frame is not None and "_inductor" not in frame.f_code.co_filename:
        frame = frame.f_back
    return frame is not None

deadline = time.monotonic() + 120
while thread.is_alive() and not in_inductor() and time.monotonic() < deadline:
    time.sleep(0.005)
print("exiting while compiling:", thread.is_alive(), flush=True)
"""


@needs_compiler
def test_exit_stops_a_background_compile_first(tiny_llama, tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    out = subprocess.run([sys.executable, "-c", EXIT_PROBE, str(tiny_llama)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "exiting while compiling: True" in out.stdout  # cold cache: it was compiling
    assert "compile running at exit: False" in out.stdout, out.stdout
