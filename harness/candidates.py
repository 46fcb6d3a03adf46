"""Parallel candidates: several replies to one prompt, each tried on a scratch copy of the workspace through
the agent's own pipeline (pipeline.py); the first whose edits make the tests pass is kept, else the one
leaving the most tests passing (then the fewest failing: an edit that breaks an import fails one test file,
but passes nothing). Only the kept reply reaches the real workspace and the prompt's history; every
candidate's outcome goes into the step report."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from pydantic import BaseModel

from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.pipeline import evaluate
from deltaserve.harness.targets import ScratchCopy
from deltaserve.harness.trial import Context, Trial
from deltaserve.harness.tried_code import CodeState
from deltaserve.tools.sandbox import Sandbox


class CandidateOutcome(BaseModel):
    index: int  # its place among the replies (0: the first the provider sent)
    outcome: Outcome
    failing: int | None = None  # failed + erroring tests after its edits, when the tests ran
    passed: int | None = None  # passing tests after its edits, when the tests ran
    completion_tokens: int | None = None  # its own decode tokens, where the provider said
    decode_passes: int | None = None
    why: str | None = None  # the first line of the error that stopped its edits (parse or apply failed, ...)
    reply: str = ""  # its text, so a run's trace shows what each candidate said (the kept one is `reply` too)

    def rank(self) -> tuple[int, int, int, int]:
        """Lower is better: passing, then most passing tests and fewest failing, then edits that did not
        run (their feedback says why), then replies that repeat an earlier one (it has been said), then
        order."""
        if self.outcome == Outcome.TESTS_PASS:
            tier = 0
        elif self.failing is not None:
            tier = 1
        else:
            tier = 2 if self.outcome.tried else 3
        return tier, -(self.passed or 0), self.failing or 0, self.index


def candidate_context(ctx: Context, before: list[str], tried: Mapping[CodeState, int]) -> Context:
    """The agent's context for one candidate: the step's candidates `before` it count as earlier replies,
    the code they gave as tried. It is tried, not previewed (dry run or not), and ranked by its own counts:
    a candidate whose tests came out worse is not undone on its copy (the agent undoes the kept one)."""
    config = ctx.config.model_copy(update={"dry_run": False, "keep_worse_edits": True})
    return replace(ctx, replies=(*ctx.replies, *(t.strip() for t in before)), tried=tried, config=config)


def try_reply(text: str, finish_reason: str | None, reader, ctx: Context, sandbox: Sandbox | str) -> Trial:
    """What one reply's edits do on a scratch copy of the context's workspace, its tests run in `sandbox`
    (the agent's)."""
    with ScratchCopy(ctx.workspace.root, sandbox, ctx.test_cmd, ctx.config.test_timeout) as copy:
        return evaluate(text, finish_reason, reader, ctx, copy)


def choose(texts: list[str], trial: Callable[[int], Trial],
           per_choice: list[dict] | None = None) -> tuple[int, list[CandidateOutcome]]:
    """The index of the reply to keep and every candidate's outcome (`trial(i)`: what texts[i] did).
    Candidates are tried in order until one passes (the rest are "not tried")."""
    outcomes: list[CandidateOutcome] = []
    passed = False
    for i, text in enumerate(texts):
        own = per_choice[i] if per_choice and i < len(per_choice) else {}
        counts = {key: own.get(key) for key in ("completion_tokens", "decode_passes")} | {"reply": text}
        if passed:
            outcomes.append(CandidateOutcome(index=i, outcome=Outcome.NOT_TRIED, **counts))
            continue
        tried = trial(i)
        outcomes.append(CandidateOutcome(index=i, outcome=tried.outcome, failing=tried.failing,
                                         passed=tried.passed, why=tried.why, **counts))
        passed = tried.outcome == Outcome.TESTS_PASS
    best = min(outcomes, key=CandidateOutcome.rank)
    return best.index, outcomes
