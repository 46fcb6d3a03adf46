"""The agent loop on a real seeded bug with scripted replies (litellm mock_response): the first diff does
not apply, its error is fed back, the second applies and the tests pass. Every StepReport number is
checked against a value computed here by hand (token counts from the model's tokenizer)."""

import io
import json

import litellm
import pytest
from rich.console import Console

from deltaserve.harness import Agent, RunReport
from deltaserve.tools.sandbox import bwrap_problem

MODEL = "openai/gpt-4o-mini"  # counted with litellm's token_counter (tiktoken, bundled); never called
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"  # conftest's calc.py
FIXED = BUGGY.replace("a - b", "a + b")
WRONG = ("I will fix the sign.\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(x, y):\n"
         "-    return x - y\n+    return x + y\n```\n")
RIGHT = ("Sorry, with the real names:\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
         " def add(a, b):\n-    return a - b\n+    return a + b\n```")
TIMES = [(0.30, 1.20), (0.05, 1.90)]  # (ttft s, decode s) the provider reports per step


def tokens(text=None, messages=None):
    return litellm.token_counter(model=MODEL, text=text) if text is not None else \
        litellm.token_counter(model=MODEL, messages=messages)


def scripted(replies, usages):
    """A `complete` that sends each scripted reply through the real client with usage computed here."""
    from deltaserve.harness.client import complete

    def call(**kwargs):
        step = len(usages)
        reply = replies[step]
        prompt = tokens(messages=kwargs["messages"])
        cached = 0 if step == 0 else usages[-1]["prompt"] + usages[-1]["completion"]  # all of step 1 + reply
        usage = {"prompt": prompt, "cached": cached, "completion": tokens(text=reply)}
        usages.append(usage)
        ttft, decode = TIMES[step % len(TIMES)]
        mock = {"choices": [{"message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": usage["completion"],
                          "total_tokens": prompt + usage["completion"],
                          "prompt_tokens_details": {"cached_tokens": cached}},
                "metrics": {"ttft_ms": ttft * 1000, "decode_ms": decode * 1000, "decode_passes": 5 + step}}
        return complete(**kwargs, mock_response=mock)

    return call


def test_two_step_fix_with_every_number_checked(project, test_cmd, tmp_path):
    assert (project / "calc.py").read_text() == BUGGY
    usages = []
    out = io.StringIO()
    trace = tmp_path / "trace.jsonl"
    agent = Agent(project, "add() returns the wrong result", test_cmd=test_cmd,
                  model=MODEL, edit_format="udiff", max_steps=4, trace=trace,
                  complete=scripted([WRONG, RIGHT], usages), console=Console(file=out, width=200))
    report = agent.run()

    initial = report.initial_tests
    assert initial is not None and not initial.ok and initial.failed == 1
    assert report.solved and report.stopped == "tests pass" and len(report.steps) == 2
    assert (project / "calc.py").read_text() == FIXED
    s1, s2 = report.steps
    u1, u2 = usages

    # step 1: the diff names lines that are not in the file; nothing is written, the error goes back
    assert (s1.step, s1.action, s1.outcome) == (1, "edit", "apply failed")
    assert not s1.apply.ok and "calc.py" in s1.apply.error and s1.tests is None
    assert (s1.prompt_tokens, s1.cached_tokens, s1.completion_tokens) == (u1["prompt"], 0, u1["completion"])
    assert (s1.prefill_saved, s1.prefill_computed) == (0, u1["prompt"])
    assert s1.whole_file_tokens == 0 and s1.decode_saved == -u1["completion"]
    assert (s1.ttft_s, s1.decode_s, s1.decode_passes) == (0.30, 1.20, 5)
    rate_p1, rate_d1 = 0.30 / u1["prompt"], 1.20 / (u1["completion"] - 1)
    assert s1.prefill_s_per_token == pytest.approx(rate_p1)
    assert s1.decode_s_per_token == pytest.approx(rate_d1)
    assert s1.est_seconds_saved == pytest.approx(0 * rate_p1 - 1.20)  # its decode seconds were wasted

    # the error was appended after reply 1; nothing earlier was rewritten
    p1, p2 = agent.prompts
    assert p2[: len(p1)] == p1 and p2[len(p1)] == {"role": "assistant", "content": WRONG}
    assert p2[len(p1) + 1]["content"].startswith("Your edits could not be applied; nothing was changed.\n")
    assert s1.apply.error in p2[len(p1) + 1]["content"]
    assert u2["prompt"] == tokens(messages=p2) and u2["cached"] == u1["prompt"] + u1["completion"]

    # step 2: applies, tests pass; the `whole` reply would have re-typed all of calc.py
    counterfactual = f"calc.py\n```\n{FIXED}```"
    assert (s2.step, s2.action, s2.outcome) == (2, "edit", "tests pass")
    assert s2.apply.ok and s2.apply.files_changed == ["calc.py"] and s2.tests.ok and s2.tests.passed == 1
    assert s2.apply.strategies == ["exact"]  # tools.patch's name for how the hunk matched
    assert (s2.prompt_tokens, s2.cached_tokens, s2.completion_tokens) == (
        u2["prompt"], u2["cached"], u2["completion"])
    assert (s2.prefill_saved, s2.prefill_computed) == (u2["cached"], u2["prompt"] - u2["cached"])
    assert s2.whole_file_tokens == tokens(text=counterfactual)
    assert s2.decode_saved == tokens(text=counterfactual) - u2["completion"]
    rate_p = (0.30 + 0.05) / (u1["prompt"] + u2["prompt"] - u2["cached"])
    rate_d = (1.20 + 1.90) / (u1["completion"] - 1 + u2["completion"] - 1)
    assert s2.prefill_s_per_token == pytest.approx(rate_p) and s2.decode_s_per_token == pytest.approx(rate_d)
    assert s2.est_seconds_saved == pytest.approx(u2["cached"] * rate_p + s2.whole_file_tokens * rate_d - 1.90)

    # run totals are sums of the steps
    assert report.prompt_tokens == u1["prompt"] + u2["prompt"] and report.cached_tokens == u2["cached"]
    assert report.completion_tokens == u1["completion"] + u2["completion"]
    assert report.decode_saved == tokens(text=counterfactual) - u1["completion"] - u2["completion"]
    assert report.decode_passes == 11
    assert report.est_seconds_saved == pytest.approx(s1.est_seconds_saved + s2.est_seconds_saved)
    assert report.final_diff == ("--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n"
                                 "-    return a - b\n+    return a + b\n \n \n def mul(a, b):\n")

    # the trace holds the run header, then one line per step, and rebuilds the same run
    header, *lines = trace.read_text().splitlines()
    assert json.loads(header)["record"] == "header" and json.loads(header)["model"] == report.model
    assert len(lines) == 2 and json.loads(lines[1])["decode_saved"] == s2.decode_saved
    ran_in = "none" if bwrap_problem() else "bwrap"  # `auto`'s pick here: the trace says which one ran
    assert initial.sandbox == json.loads(lines[1])["tests"]["sandbox"] == ran_in
    assert f"sandbox={ran_in}" in out.getvalue()
    assert RunReport.from_trace(trace).steps == report.steps

    table = out.getvalue()
    assert "apply failed" in table and "tests pass" in table and "total" in table


def test_views_and_replies_without_edits_are_answered(project, quick_test_cmd):
    usages = []
    replies = ["Let me look first.\nVIEW calc.py 1-2\nGREP def mul", "I am not sure what to do.", RIGHT]
    agent = Agent(project, "fix add", test_cmd=quick_test_cmd, model=MODEL, edit_format="udiff",  # numbered
                  complete=scripted(replies, usages), console=Console(file=io.StringIO()))
    report = agent.run()
    assert [s.action for s in report.steps] == ["view", "none", "edit"] and report.solved
    assert [s.whole_file_tokens for s in report.steps[:2]] == [0, 0]
    feedback = agent.prompts[1][-1]["content"]
    assert "VIEW calc.py 1-2:" in feedback and "1 | def add(a, b):" in feedback and "calc.py:5:" in feedback
    assert agent.prompts[2][-1]["content"].startswith("I found no edits in your reply.")


def test_dry_run_shows_edits_and_writes_nothing(project, quick_test_cmd):
    out = io.StringIO()
    agent = Agent(project, "fix add", test_cmd=quick_test_cmd, model=MODEL,
                  dry_run=True, complete=scripted([RIGHT], []), console=Console(file=out, width=200))
    report = agent.run()
    assert "not written to calc.py" in out.getvalue() and "+    return a + b" in out.getvalue()
    assert report.stopped.startswith("dry run")
    assert report.steps[0].apply.dry_run and report.steps[0].tests is None
    assert report.steps[0].whole_file_tokens == tokens(text=f"calc.py\n```\n{FIXED}```")
    assert (project / "calc.py").read_text() == BUGGY and report.final_diff == ""


def test_model_errors_end_the_run_with_the_reason(project, quick_test_cmd):
    def failing(**kwargs):
        raise litellm.exceptions.APIConnectionError(message="no server", llm_provider="openai", model=MODEL)

    agent = Agent(project, "fix add", test_cmd=quick_test_cmd, model=MODEL,
                  complete=failing, console=Console(file=io.StringIO()))
    report = agent.run()
    assert report.steps == [] and "no server" in report.stopped and not report.solved
