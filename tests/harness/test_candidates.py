"""Several candidates per step: each tried on a scratch copy, the passing one kept, all of them counted."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import litellm

from deltaserve.harness import Agent, formats
from deltaserve.harness.candidates import CandidateOutcome, choose, try_reply
from deltaserve.harness.client import complete
from deltaserve.harness.config import AgentConfig
from deltaserve.harness.trial import Context
from deltaserve.tools.workspace import Workspace

MODEL = "openai/gpt-4o-mini"  # counted with litellm's bundled tokenizer; never called
WRONG = "calc.py\n```python\ndef add(a, b):\n    return a * b\n```\n"
NOOP = "calc.py\n```python\ndef add(a, b):\n    return a - b\n```\n"
RIGHT = "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n"


def try_alone(fmt, text: str, project: Path, test_cmd: str, in_play: tuple[str, ...] = (),
              finish_reason: str | None = None):
    """One reply tried as a candidate of a run that has just started, outside any agent."""
    ctx = Context(Workspace(project), "", test_cmd, AgentConfig(test_timeout=60), fmt, in_play=in_play)
    return try_reply(text, finish_reason, fmt, ctx, "none")


def scripted(replies: list[str | tuple[str, str]], calls: list[dict]):
    """Calls answering with the next `n` replies as choices (a reply: its text, or (text, finish_reason)
    where it is not "stop"); usage as a provider would report it."""
    def call(**kwargs):
        calls.append(kwargs)
        done = sum(c.get("n", 1) for c in calls[:-1])
        sent = [r if isinstance(r, tuple) else (r, "stop") for r in replies[done : done + kwargs.get("n", 1)]]
        texts = [text for text, _ in sent]
        prompt = litellm.token_counter(model=MODEL, messages=kwargs["messages"])
        choices = [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": finish}
                   for i, (t, finish) in enumerate(sent)]
        mock = {"choices": choices,
                "usage": {"prompt_tokens": prompt, "completion_tokens": 20 * len(texts),
                          "total_tokens": prompt + 20 * len(texts),
                          "prompt_tokens_details": {"cached_tokens": 0}},
                "metrics": {"decode_passes": 15 * len(texts),
                            "choices": [{"completion_tokens": 20, "decode_passes": 15}] * len(texts)}}
        kwargs = {k: v for k, v in kwargs.items() if k not in ("seed", "n")}
        return complete(**kwargs, mock_response=mock)
    return call


def test_the_passing_candidate_is_kept_and_every_candidate_counted(project, quick_test_cmd, tmp_path):
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", candidates=3, max_steps=1, trace=tmp_path / "t.jsonl",
                  complete=scripted([WRONG, NOOP, RIGHT], calls))
    report = agent.run()
    (step,) = report.steps
    assert step.outcome == "tests pass" and step.reply == RIGHT
    assert [c.outcome for c in step.candidates] == ["tests fail", "no-op edit", "tests pass"]
    assert [c.reply for c in step.candidates] == [WRONG, NOOP, RIGHT]  # the trace shows what each one said
    assert "exactly as they were" in step.candidates[1].why and step.candidates[0].why is None
    assert step.candidates[0].failing == 1
    assert step.completion_tokens == 60 and step.decode_passes == 45  # all three decodes
    assert step.decode_passes_saved == step.whole_file_tokens - 45
    # the prompt once, its prefill by both calls (a provider without a prefix cache): never a negative cache
    assert step.cached_tokens == 0 and step.prefill_computed == 2 * step.prompt_tokens
    # the greedy reply, then two samples (not three greedy copies) in one request
    assert "n" not in calls[0] and not calls[0].get("temperature")
    assert calls[1]["n"] == 2 and calls[1]["temperature"] > 0
    assert (project / "calc.py").read_text().count("a + b") == 1  # only the kept edit reached the workspace
    assert '"outcome":"no-op edit"' in (tmp_path / "t.jsonl").read_text()  # per-candidate outcomes traced


class Tried(NamedTuple):  # what choose() reads of a trial
    outcome: str
    failing: int | None = None
    passed: int | None = None
    why: str | None = None


def test_choose_stops_at_the_first_pass_and_else_takes_the_most_passing():
    table = {"a": Tried("tests fail", 3, 5), "b": Tried("tests fail", 1, 7), "c": Tried("apply failed"),
             "d": Tried("tests pass", 0, 8), "r": Tried("repeated reply"),
             # a module that no longer imports: one erroring test file, nothing passes
             "e": Tried("tests fail", 1, 0)}

    def trying(texts):
        return lambda i: table[texts[i]]

    def pick(texts):
        return choose(texts, trying(texts))

    index, outcomes = pick(["c", "a", "b"])
    assert index == 2 and [o.outcome for o in outcomes] == ["apply failed", "tests fail", "tests fail"]
    assert outcomes[2].passed == 7
    index, _ = pick(["e", "a"])
    assert index == 1  # fewer failing, but nothing passing, ranks below three failing and five passing
    index, outcomes = pick(["r", "c"])
    assert index == 1  # an edit that did not apply (its error is feedback) over a repeat of an earlier reply
    index, outcomes = pick(["r", "d", "b", "r"])
    assert index == 1 and [o.outcome for o in outcomes] == ["repeated reply", "tests pass", "not tried",
                                                             "not tried"]
    passing = CandidateOutcome(index=1, outcome="tests pass")
    unrun = CandidateOutcome(index=0, outcome="no edits")
    assert passing.rank() < unrun.rank()


def test_repeated_candidates_are_sampled_again_hotter(project, quick_test_cmd, tmp_path):
    """A candidate repeating an earlier reply (a small model does so even sampled) is not tried, and when
    none passes as many more are asked for, hotter, in the same step; every round is counted. Step 1: one
    of two repeats the other; step 2: both repeat step 1's reply."""
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", candidates=2, max_steps=2, trace=tmp_path / "t.jsonl",
                  complete=scripted([WRONG, WRONG, NOOP, WRONG, WRONG, NOOP, RIGHT], calls))
    report = agent.run()
    first, second = report.steps
    assert first.outcome == "tests fail" and first.resampled
    assert [c.outcome for c in first.candidates] == ["tests fail", "repeated reply", "no-op edit"]
    assert first.completion_tokens == 60 and calls[2]["n"] == 1  # one more, for the one repeat
    assert second.outcome == "tests pass" and second.resampled and second.reply == RIGHT
    # NOOP's `a - b`, once step 1's `a * b` is in place, gives back the code tested at the start
    assert [c.outcome for c in second.candidates] == ["repeated reply", "repeated reply", "repeated edit",
                                                      "tests pass"]
    assert second.completion_tokens == 80  # both rounds' decodes
    greedy, sampled, again = calls[3:]  # round 1: the greedy reply and one sample; round 2: two samples
    assert "n" not in greedy and sampled["n"] == 1 and again["n"] == 2
    assert again["temperature"] > sampled["temperature"] > 0 and again["seed"] != sampled["seed"]


def test_no_more_are_sampled_once_a_candidate_passes(project, quick_test_cmd):
    """A repeat among the candidates asks for more only when none of them passes."""
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="symbol", candidates=3, max_steps=1,
                  complete=scripted([WRONG, WRONG, RIGHT], calls))
    (step,) = agent.run().steps
    assert [c.outcome for c in step.candidates] == ["tests fail", "repeated reply", "tests pass"]
    assert step.outcome == "tests pass" and not step.resampled and len(calls) == 2


def test_a_search_replace_candidate_changing_nothing_is_a_no_op_as_in_the_agent(project, quick_test_cmd):
    same = (Path(__file__).parent / "replies" / "sr_no_op.txt").read_text()  # REPLACE == SEARCH
    trial = try_alone(formats.get("search_replace"), same, project, quick_test_cmd)
    assert trial.outcome == "no-op edit" and "have no changes" in trial.why
    elsewhere = same.replace("a - b\n=======", "a / b\n=======")  # SEARCH text that is not in the file
    trial = try_alone(formats.get("search_replace"), elsewhere, project, quick_test_cmd)
    assert trial.outcome == "apply failed" and "was not applied" in trial.why


def test_under_auto_a_kept_candidate_is_applied_as_it_was_tried(project, quick_test_cmd):
    """A whole-file step answered with the one function it fixes: the candidate was read as that function
    (its tests passed on the scratch copy) while the agent read the kept reply as the whole file, deleting
    the rest (a-median: "tests worse" after a candidate passed). Both read it the same way now."""
    calls: list[dict] = []
    agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                  edit_format="auto", candidates=2, max_steps=1, complete=scripted([RIGHT, RIGHT], calls))
    report = agent.run()
    (step,) = report.steps
    assert step.edit_format == "whole"  # calc.py is tiny: auto asks for the whole file
    assert step.outcome == "tests pass" and step.candidates[0].outcome == "tests pass"
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n" \
                                                "    return a * b\n"


def test_a_whole_file_that_leaves_out_definitions_is_read_as_functions(project):
    from deltaserve.harness.formats import auto
    from deltaserve.tools.workspace import Workspace

    fmt, ws = auto.AskedFormat(auto.MEMBERS["whole"]), Workspace(project)
    assert fmt.apply(fmt.parse(RIGHT), ws, dry_run=True).new_contents["calc.py"].endswith("return a * b\n")
    # every definition re-typed: the file as written, module-level lines and all
    complete = "calc.py\n```python\nX = 1\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n" \
               "    return a * b\n```\n"
    assert fmt.apply(fmt.parse(complete), ws, dry_run=True).new_contents["calc.py"].startswith("X = 1\n")
    # not Python: the whole file
    notes = [auto.WholeFile("notes.txt", "x\n")]
    assert auto.retyped_in_part(notes, ws) == notes
