"""`--format auto`: the cost model's choices follow from file size and the run's apply-success rates."""

from __future__ import annotations

import litellm

from deltaserve.harness import Agent
from deltaserve.harness.client import complete
from deltaserve.harness.format_choice import (
    PRIOR,
    FileStats,
    FormatPlan,
    choose_format,
    file_stats,
    priors_for,
)
from deltaserve.harness.formats import auto
from deltaserve.harness.formats.reminders import reminder
from deltaserve.harness.prompt import SYSTEM

MODEL = "openai/gpt-4o-mini"  # counted with litellm's bundled tokenizer; never called


def count(text: str) -> int:
    return len(text) // 4


def module(functions: int, body_lines: int) -> str:
    body = "".join(f"    total = total + {i}\n" for i in range(body_lines))
    return "".join(f"def f{n}(total):\n{body}    return total\n\n\n" for n in range(functions))


def test_tiny_files_are_rewritten_and_large_ones_edited_by_function():
    tiny = file_stats("a.py", module(1, 2), count)
    large = file_stats("b.py", module(40, 8), count)
    assert choose_format([tiny], [], local=True)[0] == "whole"
    assert choose_format([large], [], local=True)[0] == "symbol"
    assert large.definition_tokens is not None and large.tokens > 20 * large.definition_tokens


def test_diffs_once_they_apply_and_definitions_are_long():
    long_defs = FileStats(tokens=6000, tokens_per_line=8.0, definition_tokens=1500.0)
    assert choose_format([long_defs], [], local=True)[0] == "search_replace"  # a function is long to re-type
    applying = [("udiff", True)] * 6
    name, reason = choose_format([long_defs], applying, local=True)
    assert name == "udiff" and "expected decode passes" in reason
    failing = [("udiff", False)] * 6 + [("search_replace", False)] * 6
    assert choose_format([long_defs], failing, local=True)[0] == "symbol"


def test_a_measured_model_starts_from_its_own_priors():
    """The bundled 1.5B model's measured apply rates (format_choice's MEASURED_PRIORS): for a file of a few
    small functions it starts with whole, where an unmeasured model starts with symbol; once files are
    large, with whole functions, its SEARCH/REPLACE blocks applying least often of all."""
    qwen = priors_for("local/qwen2.5-coder-1.5b")
    assert qwen != PRIOR and priors_for("openai/gpt-4o-mini") is PRIOR
    small = file_stats("a.py", module(6, 3), count)
    assert choose_format([small], [], local=True)[0] == "symbol"
    assert choose_format([small], [], local=True, prior=qwen)[0] == "whole"
    large = file_stats("b.py", module(40, 8), count)
    assert choose_format([large], [], local=True, prior=qwen)[0] == "symbol"
    plan = FormatPlan(count, local=True, model="local/qwen2.5-coder-1.5b")
    assert plan.choose({"a.py": module(6, 3)})[0] == "whole"


def test_non_python_files_never_get_symbol():
    stats = file_stats("page.html", "<p>x</p>\n" * 400, count)
    assert stats.definition_tokens is None
    assert choose_format([stats], [], local=True)[0] != "symbol"
    plan = FormatPlan(count, local=False)
    plan.record("whole", "apply failed")
    plan.record("whole", "test edit refused")  # says nothing about the format
    assert plan.history == [("whole", False)]


def test_an_auto_run_names_the_format_per_step_and_records_why(project, quick_test_cmd):
    replies = ["calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n"]

    def call(**kwargs):
        prompt = litellm.token_counter(model=MODEL, messages=kwargs["messages"])
        choice = {"message": {"role": "assistant", "content": replies[0]}, "finish_reason": "stop"}
        mock = {"choices": [choice],
                "usage": {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12}}
        return complete(**kwargs, mock_response=mock)

    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="auto", max_steps=1, complete=call)
    report = agent.run()
    (step,) = report.steps
    assert report.edit_format == "auto" and step.edit_format in ("whole", "symbol")
    assert step.outcome == "tests pass" and "expected decode passes" in step.format_reason
    first = agent.prompts[0]
    # the system prompt describes the step's format alone, as that format's own prompt would
    assert first[0]["content"] == f"{SYSTEM}\n\n{auto.opening(step.edit_format)}"
    assert first[-1]["content"].endswith(reminder(step.edit_format, "calc.py"))
