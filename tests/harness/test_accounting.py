import json

import pytest

from deltaserve.harness.accounting import RunReport, StepReport, estimate_seconds_saved, measured_rates


def step(n, **kw):
    base = dict(step=n, action="edit", prompt_tokens=1000, cached_tokens=800, completion_tokens=50,
                whole_file_tokens=300, ttft_s=0.4, decode_s=4.9)
    return StepReport(**{**base, **kw})


def test_savings_follow_the_design_formulas():
    s = step(1, prefill_s_per_token=0.002, decode_s_per_token=0.1)
    assert (s.prefill_saved, s.prefill_computed, s.decode_saved) == (800, 200, 250)
    # the whole-file reply at the plain decode rate, minus this reply's measured decode seconds
    assert s.est_seconds_saved == 800 * 0.002 + 300 * 0.1 - 4.9


def test_unknown_cached_is_unknown_not_zero():
    s = step(1, cached_tokens=None, prefill_s_per_token=0.002, decode_s_per_token=0.1)
    assert s.prefill_saved is None and s.prefill_computed is None and s.est_seconds_saved is None
    run = RunReport(steps=[step(1), s])
    assert run.cached_tokens is None and run.cache_hit_rate is None
    assert json.loads(s.model_dump_json())["cached_tokens"] is None


def test_negative_decode_saving_is_reported():
    assert step(1, whole_file_tokens=0, completion_tokens=40).decode_saved == -40


def test_measured_rates_use_computed_prefill_and_tokens_after_the_first():
    a = step(1, prompt_tokens=1000, cached_tokens=0, ttft_s=2.0, completion_tokens=11, decode_s=1.0)
    b = step(2, prompt_tokens=1100, cached_tokens=1000, ttft_s=0.5, completion_tokens=21, decode_s=3.0)
    assert measured_rates([a, b]) == (2.5 / 1100, 4.0 / 30)
    assert measured_rates([step(1, ttft_s=None, decode_s=None)]) == (None, None)
    assert estimate_seconds_saved(10, 0, 5.0, 0.5, 1.0) == 0.0


def test_with_drafting_the_decode_rate_is_a_plain_pass_and_the_reply_costs_its_seconds():
    """A reply drafted from the old file: 180 tokens in 27 passes, 20 of them plain (one token each, 35 ms).
    The whole-file reply decoded without drafts would take a pass a token: its tokens x 35 ms."""
    drafted = step(1, completion_tokens=180, whole_file_tokens=179, decode_passes=27, decode_s=2.2,
                   plain_passes=20, plain_pass_s=0.7, cached_tokens=0, ttft_s=4.0)
    prefill_rate, decode_rate = measured_rates([drafted])
    assert decode_rate == 0.7 / 20  # not 2.2 / 179: a drafted token is cheaper than a plain one
    s = drafted.model_copy(update={"prefill_s_per_token": prefill_rate, "decode_s_per_token": decode_rate})
    assert s.decode_saved == -1  # no tokens saved, but seconds: 179 plain passes vs 2.2 s measured
    assert s.est_seconds_saved == pytest.approx(179 * 0.035 - 2.2) and s.est_seconds_saved > 0


def test_run_sums_steps_and_round_trips_through_a_trace(tmp_path):
    steps = [step(1, prefill_s_per_token=0.001, decode_s_per_token=0.1),
             step(2, cached_tokens=900, completion_tokens=70, whole_file_tokens=0, prefill_s_per_token=0.001,
                  decode_s_per_token=0.1)]
    run = RunReport(model="m", edit_format="udiff", steps=steps)
    assert (run.prompt_tokens, run.cached_tokens, run.prefill_computed) == (2000, 1700, 300)
    assert (run.completion_tokens, run.whole_file_tokens, run.decode_saved) == (120, 300, 180)
    assert run.cache_hit_rate == 0.85
    assert abs(run.est_seconds_saved - sum(s.est_seconds_saved for s in steps)) < 1e-12
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(s.model_dump_json() + "\n" for s in steps))
    again = RunReport.from_trace(trace)
    assert again.steps == run.steps and again.decode_saved == 180
