"""End to end: the bundled SmolLM2-135M through the real in-process engine, whatever it answers."""

import io

import pytest
from rich.console import Console

from deltaserve.harness import Agent, RunReport

MODEL = "local/smollm2-135m"
pytestmark = pytest.mark.slow


def test_two_real_steps_reuse_the_prefix_cache(project, test_cmd, tmp_path):
    from deltaserve.harness.client import local_engine

    eng = local_engine("smollm2-135m")
    trace = tmp_path / "trace.jsonl"
    agent = Agent(project, "add() returns the wrong result", test_cmd=test_cmd, model=MODEL,
                  edit_format="udiff", max_steps=2, max_tokens=32, trace=trace,
                  console=Console(file=io.StringIO()))
    report = agent.run()

    assert len(report.steps) == 2, report.stopped
    first, second = report.steps
    for s in report.steps:
        calls = 2 if s.resampled else 1  # a reply repeating step 1's is asked for again within its step
        assert 0 < s.completion_tokens <= 32 * calls and s.ttft_s is not None and s.decode_s is not None
        assert s.prefill_saved == s.cached_tokens
        # the engine's own count: a second call of the step recomputes at most the prompt's last block
        extra = s.prefill_computed - (s.prompt_tokens - s.cached_tokens)
        assert 0 < extra <= eng.config.block_size if s.resampled else extra == 0
        assert s.decode_passes is not None and s.decode_passes <= s.completion_tokens
        assert s.plain_passes is not None and s.plain_passes <= s.decode_passes  # the engine's own timing
        if s.apply is not None and s.apply.ok:
            assert s.whole_file_tokens > 0
        else:
            assert s.whole_file_tokens == 0 and s.decode_saved == -s.completion_tokens
    assert first.prompt_tokens == len(eng.apply_chat_template(agent.prompts[0]))
    assert second.prompt_tokens == len(eng.apply_chat_template(agent.prompts[1]))
    # step 2 re-sends step 1's prompt and reply: every full KV block of step 1's prompt comes from the cache
    block = eng.config.block_size
    assert second.cached_tokens > 0
    assert second.cached_tokens >= first.prompt_tokens // block * block
    assert second.est_seconds_saved is not None

    again = RunReport.from_trace(trace)
    assert again.steps == report.steps and again.cached_tokens == report.cached_tokens
