"""search_replace steps of the agent: on our engine (local/), decoded under the edits constraint, so even a
random-weight model's reply is blocks of the files in play that apply; with any other provider, streamed
and stopped at a SEARCH line the file lacks, the model told that line (outcome "stopped early")."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from deltaserve.harness import Agent
from deltaserve.harness.outcomes import Outcome

NEVER_FROM_A_CONSTRAINED_REPLY = {Outcome.PARSE_FAILED, Outcome.APPLY_FAILED, Outcome.NO_EDITS,
                                  Outcome.EXAMPLE_COPIED, Outcome.STOPPED_EARLY}


@pytest.fixture(scope="module")
def local_tiny(tiny_llama):
    from deltaserve.engine import Engine
    from deltaserve.harness.client import register_local_engine

    register_local_engine("tiny-edits", Engine.from_pretrained(str(tiny_llama), dtype="float32",
                                                               num_blocks=1024))
    return "local/tiny-edits"


def test_a_local_models_search_replace_reply_is_blocks_that_apply(project, quick_test_cmd, local_tiny):
    agent = Agent(project, "add() returns the wrong result", model=local_tiny, edit_format="search_replace",
                  test_cmd=quick_test_cmd, max_steps=2, max_tokens=200, localize=False, sandbox="none",
                  console=Console(file=io.StringIO()))
    report = agent.run()
    for step in report.steps:
        assert step.outcome not in NEVER_FROM_A_CONSTRAINED_REPLY, (step.outcome, step.reply)
        assert step.reply.startswith("calc.py\n```\n<<<<<<< SEARCH\n")
        assert step.decoding == "constrained" and step.decode_budget_unspent is None


def test_a_local_models_udiff_reply_is_a_diff_of_a_file_in_play(project, quick_test_cmd, local_tiny):
    agent = Agent(project, "add() returns the wrong result", model=local_tiny, edit_format="udiff",
                  test_cmd=quick_test_cmd, max_steps=1, max_tokens=120, localize=False, sandbox="none",
                  console=Console(file=io.StringIO()))
    step = agent.run().steps[0]
    assert step.decoding == "constrained" and step.reply.startswith("```diff\n--- a/calc.py\n"), step.reply
    assert step.outcome not in NEVER_FROM_A_CONSTRAINED_REPLY, (step.outcome, step.reply)


def test_a_local_models_symbol_reply_is_definitions_of_a_python_file_in_play(project, quick_test_cmd,
                                                                            local_tiny):
    agent = Agent(project, "add() returns the wrong result", model=local_tiny, edit_format="symbol",
                  test_cmd=quick_test_cmd, max_steps=1, max_tokens=60, localize=False, sandbox="none",
                  early_stop=False, console=Console(file=io.StringIO()))
    step = agent.run().steps[0]
    assert step.decoding == "constrained" and step.reply.startswith("calc.py\n```python\n"), step.reply
    assert step.outcome not in (Outcome.PARSE_FAILED, Outcome.NO_EDITS, Outcome.EXAMPLE_COPIED)
    # the tiny model never closes its fence by itself within 60 tokens: the budget closed it whole
    assert step.finish_reason == "length" and step.reply.rstrip().endswith("```"), step.reply


def test_a_local_models_symbol_reply_is_also_stopped_where_its_code_can_no_longer_parse(
        project, quick_test_cmd, local_tiny):
    # the grammar cannot tell Python; the watch can: the random model's code is cut at its first line
    # that no later one repairs, and the model is told which
    agent = Agent(project, "add() returns the wrong result", model=local_tiny, edit_format="symbol",
                  test_cmd=quick_test_cmd, max_steps=1, max_tokens=200, localize=False, sandbox="none",
                  console=Console(file=io.StringIO()))
    step = agent.run().steps[0]
    assert step.decoding == "constrained" and step.reply.startswith("calc.py\n```python\n"), step.reply
    assert step.outcome == Outcome.STOPPED_EARLY and step.finish_reason == "early_stop", step.reply
    assert "not valid Python" in step.apply.error and step.decode_budget_unspent > 0


def test_another_providers_reply_is_stopped_at_a_line_the_file_lacks(project, quick_test_cmd):
    from deltaserve.harness.client import complete

    bad = ("calc.py\n```\n<<<<<<< SEARCH\ndef add(a, b):\n    total = accumulate_everything(a, b)\n"
           "    return total\n=======\ndef add(a, b):\n    return a + b\n>>>>>>> REPLACE\n```\n")
    seen = []

    def call(**kwargs):
        seen.append(kwargs)
        return complete(**kwargs, mock_response=bad)

    agent = Agent(project, "add() returns the wrong result", model="openai/gpt-4o-mini",
                  edit_format="search_replace", test_cmd=quick_test_cmd, max_steps=1, localize=False,
                  sandbox="none", complete=call, console=Console(file=io.StringIO()))
    step = agent.run().steps[0]
    assert "watch" in seen[0] and "extra_body" not in seen[0]
    assert step.outcome == Outcome.STOPPED_EARLY
    assert "accumulate_everything(a, b)\n" in step.reply and "return total" not in step.reply  # cut there
    assert (project / "calc.py").read_text().count("a - b") == 1  # nothing written
    # the tokens decoded up to the cut are counted (a stream cut early brings no usage block)
    assert step.decoding == "early stop" and step.finish_reason == "early_stop"
    assert 0 < step.completion_tokens < agent.count(bad) and step.prompt_tokens > 0
    assert step.decode_budget_unspent == agent.config.max_tokens - step.completion_tokens


def test_another_providers_diff_is_stopped_at_a_line_the_file_lacks(project, quick_test_cmd):
    from deltaserve.harness.client import complete

    bad = ("```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
           "-    total = accumulate_everything(a, b)\n+    return a + b\n```\n")
    agent = Agent(project, "add() returns the wrong result", model="openai/gpt-4o-mini", edit_format="udiff",
                  test_cmd=quick_test_cmd, max_steps=1, localize=False, sandbox="none",
                  complete=lambda **kwargs: complete(**kwargs, mock_response=bad),
                  console=Console(file=io.StringIO()))
    step = agent.run().steps[0]
    assert step.decoding == "early stop" and step.outcome == Outcome.STOPPED_EARLY
    assert "accumulate_everything(a, b)\n" in step.reply and "return a + b" not in step.reply  # cut there
    assert step.decode_budget_unspent > 0
    assert "diff's line '-    total = accumulate_everything(a, b)' is not in calc.py" in step.apply.error


def test_a_stopped_reply_asked_for_again_is_counted_with_the_new_one(project, quick_test_cmd):
    # step 2 repeats step 1's reply (stopped early both times) and is asked for again: the step counts both
    from deltaserve.harness.client import complete

    bad = ("calc.py\n```\n<<<<<<< SEARCH\n    total = accumulate_everything(a, b)\n=======\n"
           "    return a + b\n>>>>>>> REPLACE\n```\n")
    agent = Agent(project, "add() returns the wrong result", model="openai/gpt-4o-mini",
                  edit_format="search_replace", test_cmd=quick_test_cmd, max_steps=2, localize=False,
                  sandbox="none", complete=lambda **kwargs: complete(**kwargs, mock_response=bad),
                  console=Console(file=io.StringIO()))
    first, second = agent.run().steps
    assert second.resampled and first.outcome == Outcome.STOPPED_EARLY
    assert second.completion_tokens == 2 * first.completion_tokens > 0 and second.prompt_tokens > 0
