"""Replies cut off at the token limit inside a code block: whole-definition formats keep the definitions
the model finished, whole files are never written short, and a cut candidate is read as the agent would
read it (each reply's own finish_reason). Real files, real test commands; only the replies are scripted."""

from __future__ import annotations

import litellm

from deltaserve.harness import Agent, formats
from deltaserve.harness.candidates import try_reply
from deltaserve.harness.client import complete
from deltaserve.harness.cut_replies import complete_definitions, cut_reply

MODEL = "openai/gpt-4o-mini"  # counted with litellm's bundled tokenizer; never called
FIXED_ADD = "def add(a, b):\n    return a + b\n"
# the whole file re-typed with add() fixed, cut inside mul()'s body: a short file if written as it is
CUT = f"calc.py\n```python\n{FIXED_ADD}\n\ndef mul(a, b):\n    return a"
CUT_IN_A_DECORATOR = f"calc.py\n```python\n{FIXED_ADD}\n\n@functools.cache\n"


def scripted(replies: list[tuple[str, str]], calls: list[dict]):
    """Calls answering with the next `n` (text, finish_reason) replies as choices."""
    def call(**kwargs):
        calls.append(kwargs)
        done = sum(c.get("n", 1) for c in calls[:-1])
        sent = replies[done : done + kwargs.get("n", 1)]
        prompt = litellm.token_counter(model=MODEL, messages=kwargs["messages"])
        choices = [{"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
                   for i, (text, finish) in enumerate(sent)]
        mock = {"choices": choices, "usage": {"prompt_tokens": prompt, "completion_tokens": 20 * len(sent),
                                              "total_tokens": prompt + 20 * len(sent)}}
        kwargs = {k: v for k, v in kwargs.items() if k not in ("seed", "n")}
        return complete(**kwargs, mock_response=mock)
    return call


def test_the_definitions_before_the_cut_are_kept_and_the_cut_one_named():
    kept = complete_definitions(CUT)
    assert kept.left_out == "mul"
    (edit,) = formats.get("symbol").parse(kept.text)
    assert edit.code == FIXED_ADD
    # a decorator line belongs to the definition it starts
    assert formats.get("symbol").parse(complete_definitions(CUT_IN_A_DECORATOR).text)[0].code == FIXED_ADD


def test_nothing_is_kept_when_no_definition_was_finished_or_the_file_is_not_python():
    assert complete_definitions("calc.py\n```python\ndef add(a, b):\n    return a") is None
    assert complete_definitions("calc.py\n```python\nimport os\n\ndef add(a, b):\n") is None
    assert complete_definitions(CUT.replace("calc.py", "calc.js")) is None


def test_only_formats_that_read_definitions_keep_part_of_a_cut_reply():
    assert cut_reply(CUT, "stop", formats.get("whole")) is None  # not cut: read as usual
    assert cut_reply(CUT, "length", formats.get("whole")).text is None  # a whole file would be written short
    assert cut_reply(CUT, "length", formats.get("symbol")).left_out == "mul"
    assert cut_reply(CUT, "length", formats.get("auto")).left_out == "mul"
    closed = CUT + "\n```\n"  # closed just at the limit: complete
    assert cut_reply(closed, "length", formats.get("whole")) is None


def test_the_agent_applies_the_finished_definitions_and_says_what_was_left_out(project, quick_test_cmd):
    wrong = CUT.replace("a + b", "a * b")
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", max_steps=2,
                  complete=scripted([(wrong, "length"), (CUT, "length")], calls))
    first, second = agent.run().steps
    assert first.outcome == "tests fail"  # add() as the cut reply wrote it: applied, then tested
    assert "inside `mul`: the complete definitions before it were used" in agent.prompts[1][-1]["content"]
    assert second.outcome == "tests pass"
    text = (project / "calc.py").read_text()
    assert "a + b" in text and "def mul(a, b):\n    return a * b" in text  # mul() as it was, not cut short


def test_a_cut_candidate_is_read_with_its_own_finish_reason(project, quick_test_cmd):
    """Two candidates of one request: the first cut in the whole format (nothing written, tried or kept),
    the second complete and passing."""
    whole_fixed = f"calc.py\n```python\n{FIXED_ADD}\n\ndef mul(a, b):\n    return a * b\n```\n"
    assert try_reply(formats.get("whole"), CUT, project, quick_test_cmd, 30, False,
                     finish_reason="length").outcome == "cut off"
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="whole", candidates=2, max_steps=1,
                  complete=scripted([(CUT, "length"), (whole_fixed, "stop")], calls))
    (step,) = agent.run().steps
    assert [c.outcome for c in step.candidates] == ["cut off", "tests pass"]
    assert step.outcome == "tests pass" and "a * b" in (project / "calc.py").read_text()
