"""The prompt only grows: for a 4-step run, each step's chat-templated prompt (engine tokenizer) starts with
the previous prompt's token ids followed by the reply's token ids and the end-of-turn marker, which is
exactly what the engine's prefix cache holds after serving that step."""

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from deltaserve.harness import Agent

MODEL = "local/smollm2-135m"
REPLIES = [
    "Let me see the file first.\nVIEW calc.py\n",
    # a diff that does not apply; trailing spaces and a unicode arrow must survive the round trip
    "Fix → sign:  \n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(x, y):\n"
    "-    return x - y\n+    return x + y\n```\n\n",
    "Hmm.\n\n\n",
    "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
    "+    return a * b\n```",
]


@pytest.fixture(scope="module")
def engine():
    from deltaserve.harness.client import local_engine

    return local_engine("smollm2-135m")


def test_each_prompt_extends_the_previous_prompt_and_reply(engine, project, test_cmd):
    from deltaserve.harness.client import complete

    replies = iter(REPLIES)
    agent = Agent(project, "add() returns the wrong result", test_cmd=test_cmd, model=MODEL, max_steps=4,
                  complete=lambda **kw: complete(**kw, mock_response=next(replies)),
                  console=Console(file=io.StringIO()))
    report = agent.run()
    assert [s.action for s in report.steps] == ["view", "edit", "none", "edit"]
    assert [s.outcome for s in report.steps][1:] == ["apply failed", "no edits", "tests fail"]
    assert [s.prefix_break for s in report.steps] == [None] * 4  # the agent's own monitor agrees

    tok = engine.tokenizer
    end_of_turn = tok.convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn in engine.eos_token_ids  # what the model emits to end its reply
    ids = [engine.apply_chat_template(messages) for messages in agent.prompts]
    assert len(ids) == 4
    for n in range(3):
        reply_ids = tok.encode(REPLIES[n], add_special_tokens=False) + [end_of_turn]
        expected = ids[n] + reply_ids
        assert ids[n + 1][: len(expected)] == expected, f"prompt {n + 2} does not extend prompt {n + 1}"
        assert len(ids[n + 1]) > len(expected)  # and the feedback follows


def test_the_step_report_says_where_a_prompt_left_the_cached_prefix(engine, project, quick_test_cmd,
                                                                     tmp_path):
    """A reply that starts with blank lines is stored without them (the template's "assistant\n" would
    merge with them), so the next prompt drops the generated newlines: the cache keeps the prompt, loses the
    reply, and the report (and the trace) say so at that token."""
    from deltaserve.harness.client import complete

    replies = iter(["\n\nVIEW calc.py\n", "Hmm.", "Hmm.", "Hmm?"])  # step 3's repeat is asked for again
    trace = tmp_path / "trace.jsonl"
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  max_steps=3, complete=lambda **kw: complete(**kw, mock_response=next(replies)), trace=trace,
                  console=Console(file=io.StringIO()))
    report = agent.run()
    first_prompt = engine.apply_chat_template(agent.prompts[0])
    brk = report.steps[1].prefix_break
    assert brk is not None and brk.position == len(first_prompt)
    assert brk.expected.startswith("\n\n") and brk.got.startswith("VIEW")
    assert report.steps[0].prefix_break is None and report.steps[2].prefix_break is None
    traced = [json.loads(line) for line in trace.read_text().splitlines()[1:]]  # after the run header
    assert traced[1]["prefix_break"]["position"] == brk.position and traced[0]["prefix_break"] is None


def test_remote_names_of_our_models_count_with_the_same_tokenizer(engine):
    from deltaserve.harness.tokens import TokenCounter

    text = "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n-    return a - b\n+    return a + b\n```"
    served = TokenCounter("openai/smollm2-135m")  # e.g. `deltaserve serve` behind api_base
    assert served.tokenizer is not None
    assert served.count(text) == TokenCounter("local/smollm2-135m").count(text) == len(
        engine.tokenizer.encode(text, add_special_tokens=False))
    assert TokenCounter("openai/gpt-4o-mini").tokenizer is None  # litellm counts those


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=st.text(max_size=60), feedback=st.text(max_size=20))
def test_prefix_holds_for_any_reply_text(engine, reply, feedback):
    """Whatever the model writes (leading whitespace, unicode, stray newlines), the next prompt starts with
    this prompt + the reply's tokens + the end-of-turn token."""
    from deltaserve.harness.prompt import Prompt

    p = Prompt("FORMAT", "CONTEXT", "TASK")
    before = engine.apply_chat_template(p.messages)
    p.add_reply(reply)
    p.add_feedback(feedback)
    after = engine.apply_chat_template(p.messages)
    expected = before + engine.tokenizer.encode(reply.lstrip(), add_special_tokens=False) + [
        engine.tokenizer.convert_tokens_to_ids("<|im_end|>")]
    assert after[: len(expected)] == expected
