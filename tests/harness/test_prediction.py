"""Predicted Outputs: with a local model and the `whole` format, every file the model has seen is passed as
`prediction` (in whole-format syntax, as it is now); other formats and remote models get none."""

import io

import pytest
from rich.console import Console

from deltaserve.harness import Agent
from deltaserve.harness.formats import whole

FIXED_WHOLE = "calc.py\n```\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n```\n"


def run_capturing(project, test_cmd, model, fmt, replies, counter=None):
    from deltaserve.harness.client import complete

    calls = []

    def call(**kwargs):
        calls.append(kwargs)
        return complete(**kwargs, mock_response=replies[len(calls) - 1])

    agent = Agent(project, "add() returns the wrong result", test_cmd=test_cmd, model=model, edit_format=fmt,
                  max_steps=len(replies), complete=call, counter=counter, console=Console(file=io.StringIO()))
    return agent.run(), calls


def test_whole_format_on_a_local_model_passes_the_files_as_prediction(project, quick_test_cmd):
    before = (project / "calc.py").read_text()
    report, calls = run_capturing(project, quick_test_cmd, "local/smollm2-135m", "whole",
                                  ["VIEW test_calc.py", FIXED_WHOLE], counter=len)
    assert report.solved
    # step 1: the context file (calc.py, from the task's `add()`) as it is; step 2 adds the file viewed
    assert calls[0]["prediction"] == whole.render({"calc.py": before})
    tests_file = (project / "test_calc.py").read_text()
    assert calls[1]["prediction"] == whole.render({"calc.py": before, "test_calc.py": tests_file})


def test_prediction_follows_the_files_after_an_edit(project, quick_test_cmd):
    half = "calc.py\n```\ndef add(a, b):\n    return a - b + 0\n\n\ndef mul(a, b):\n    return a * b\n```\n"
    _, calls = run_capturing(project, quick_test_cmd, "local/smollm2-135m", "whole", [half, FIXED_WHOLE],
                             counter=len)
    assert "return a - b + 0" in calls[1]["prediction"] and "return a - b + 0" not in calls[0]["prediction"]


@pytest.mark.parametrize("model, fmt", [("local/smollm2-135m", "udiff"), ("openai/gpt-4o-mini", "whole")])
def test_no_prediction_otherwise(project, quick_test_cmd, model, fmt):
    _, calls = run_capturing(project, quick_test_cmd, model, fmt, ["VIEW calc.py"], counter=len)
    assert calls[0]["prediction"] is None
