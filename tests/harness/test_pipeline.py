"""One pipeline turns a reply into tested edits for the agent's own reply and for every candidate: a check
added to its list refuses both, with the outcome and the words it carries."""

from __future__ import annotations

from deltaserve.errors import ReplyRejected
from deltaserve.harness import Agent, pipeline
from deltaserve.harness.outcomes import Outcome

from .test_candidates import MODEL, RIGHT, WRONG, scripted


def test_a_check_added_to_the_list_refuses_the_agents_reply_and_every_candidate(project, quick_test_cmd,
                                                                               monkeypatch):
    def no_multiplying_in_add(draft, ctx):
        written = draft.preview.new_contents.values()
        if any("def add(a, b):\n    return a * b" in (text or "") for text in written):
            raise ReplyRejected(Outcome.STUBBED_OUT, "Do not multiply.", "multiplies")

    monkeypatch.setattr(pipeline, "PREVIEW_CHECKS", (*pipeline.PREVIEW_CHECKS, no_multiplying_in_add))

    def run(replies: list[str], candidates: int):
        agent = Agent(project, "add() returns the wrong result", test_cmd=quick_test_cmd, model=MODEL,
                      edit_format="symbol", candidates=candidates, max_steps=2,
                      complete=scripted(replies, []))
        return agent, agent.run()

    _, report = run([WRONG, RIGHT], candidates=2)
    (step,) = report.steps
    assert [c.outcome for c in step.candidates] == ["stubbed out", "tests pass"]
    assert step.candidates[0].why == "multiplies" and step.outcome == "tests pass"
    (project / "calc.py").write_text((project / "calc.py").read_text().replace("a + b", "a - b"))
    agent, report = run([WRONG, RIGHT], candidates=1)
    assert [s.outcome for s in report.steps] == ["stubbed out", "tests pass"]
    assert report.steps[0].apply.error == "multiplies"
    assert agent.prompts[1][-1]["content"].startswith("Do not multiply.")  # what the model was told
