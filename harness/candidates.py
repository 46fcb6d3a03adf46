"""Parallel candidates: several replies to one prompt, each tried on a scratch copy of the workspace; the
first whose edits make the tests pass is kept, else the one leaving the fewest failing tests. Only the
kept reply reaches the real workspace and the prompt's history; every candidate's outcome goes into the
step report."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from deltaserve.errors import ToolError
from deltaserve.harness.edit_checks import refusal
from deltaserve.harness.path_repair import repair_paths
from deltaserve.harness.workspace_guard import make_copy
from deltaserve.tools.sandbox import Sandbox
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

PASSED = "tests pass"


class CandidateOutcome(BaseModel):
    index: int  # its place among the replies (0: the first the provider sent)
    outcome: str  # tests pass | tests fail | apply failed | parse failed | no edits | ... | not tried
    failing: int | None = None  # failed + erroring tests after its edits, when the tests ran
    completion_tokens: int | None = None  # its own decode tokens, where the provider said
    decode_passes: int | None = None

    def rank(self) -> tuple[int, int, int]:
        """Lower is better: passing, then fewest failing tests, then edits that did not run, then order."""
        tier = 0 if self.outcome == PASSED else (1 if self.failing is not None else 2)
        return tier, self.failing or 0, self.index


def try_reply(fmt, text: str, root: Path, test_cmd: str, timeout: float, allow_test_edits: bool,
              sandbox: Sandbox | str = "auto", in_play: list[str] = (),
              seen_in_part: frozenset[str] = frozenset()) -> tuple[str, int | None]:
    """(outcome, failing tests) of one reply's edits applied to a scratch copy of `root`, its tests run in
    `sandbox` (the agent's); edits naming a missing file are re-aimed among `in_play` as the agent would
    (harness/path_repair.py)."""
    copy = make_copy(root)
    try:
        scratch = Workspace(copy)
        try:
            edits = fmt.parse(text)
        except ValueError:
            return "parse failed", None
        if not edits:
            return "no edits", None
        edits, _ = repair_paths(edits, scratch, list(in_play))
        try:
            preview = fmt.apply(edits, scratch, dry_run=True)
            refused = refusal(preview, scratch, allow_test_edits, seen_in_part)
            if refused is not None:
                return refused[0], None
            fmt.apply(edits, scratch)
        except ToolError:
            return "apply failed", None
        result = run_tests(scratch, test_cmd, timeout=timeout, sandbox=sandbox)
        if result.ok:
            return PASSED, 0
        return "tests fail", (result.failed + result.errors) or 1  # a failing command that counts nothing
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


def choose(texts: list[str], trial: Callable[[str], tuple[str, int | None]], earlier: list[str],
           per_choice: list[dict] | None = None) -> tuple[int, list[CandidateOutcome]]:
    """The index of the reply to keep and every candidate's outcome. Candidates are tried in order until
    one passes (the rest are "not tried"); a reply repeating an earlier step's is not tried again."""
    outcomes: list[CandidateOutcome] = []
    passed = False
    for i, text in enumerate(texts):
        own = per_choice[i] if per_choice and i < len(per_choice) else {}
        counts = {key: own.get(key) for key in ("completion_tokens", "decode_passes")}
        if passed:
            outcomes.append(CandidateOutcome(index=i, outcome="not tried", **counts))
        elif text.strip() in earlier or text.strip() in (t.strip() for t in texts[:i]):
            outcomes.append(CandidateOutcome(index=i, outcome="repeated reply", **counts))
        else:
            outcome, failing = trial(text)
            outcomes.append(CandidateOutcome(index=i, outcome=outcome, failing=failing, **counts))
            passed = outcome == PASSED
    best = min(outcomes, key=CandidateOutcome.rank)
    return best.index, outcomes
