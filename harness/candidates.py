"""Parallel candidates: several replies to one prompt, each tried on a scratch copy of the workspace; the
first whose edits make the tests pass is kept, else the one leaving the most tests passing (then the
fewest failing: an edit that breaks an import fails one test file, but passes nothing). Only the
kept reply reaches the real workspace and the prompt's history; every candidate's outcome goes into the
step report."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Collection
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel

from deltaserve.errors import NoChangesError, ToolError
from deltaserve.harness.cut_replies import cut_reply
from deltaserve.harness.edit_checks import copied_placeholders, refusal
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.path_repair import repair_misnamed, repair_paths
from deltaserve.harness.stale_edits import rebase_stale_blocks
from deltaserve.harness.tried_code import CodeState, code_state
from deltaserve.harness.workspace_guard import make_copy
from deltaserve.tools.sandbox import Sandbox
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace


class Trial(NamedTuple):
    """What one reply's edits did on a scratch copy; the counts and the code's state only when the tests
    ran; `why`: the first line of the error that stopped it (a parse or apply failure)."""
    outcome: Outcome
    failing: int | None = None
    passed: int | None = None
    state: CodeState | None = None
    why: str | None = None


class CandidateOutcome(BaseModel):
    index: int  # its place among the replies (0: the first the provider sent)
    outcome: Outcome
    failing: int | None = None  # failed + erroring tests after its edits, when the tests ran
    passed: int | None = None  # passing tests after its edits, when the tests ran
    completion_tokens: int | None = None  # its own decode tokens, where the provider said
    decode_passes: int | None = None
    why: str | None = None  # the first line of the error that stopped it (parse or apply failed)
    reply: str = ""  # its text, so a run's trace shows what each candidate said (the kept one is `reply` too)

    def rank(self) -> tuple[int, int, int, int]:
        """Lower is better: passing, then most passing tests and fewest failing, then edits that did not
        run (their feedback says why), then replies that repeat an earlier one (it has been said), then
        order."""
        if self.outcome is Outcome.TESTS_PASS:
            tier = 0
        elif self.failing is not None:
            tier = 1
        else:
            tier = 2 if self.outcome.tried else 3
        return tier, -(self.passed or 0), self.failing or 0, self.index


def try_reply(fmt, text: str, root: Path, test_cmd: str, timeout: float, allow_test_edits: bool,
              sandbox: Sandbox | str = "auto", in_play: list[str] = (),
              seen_in_part: frozenset[str] = frozenset(), originals: dict[str, str | None] | None = None,
              tried: Collection[CodeState] = (), finish_reason: str | None = None) -> Trial:
    """What one reply's edits did on a scratch copy of `root`, its tests run in `sandbox` (the agent's);
    edits naming a missing file are re-aimed among `in_play` as the agent would (harness/path_repair.py).
    Edits giving code in `tried` (harness/tried_code.py; `originals`: the run's touched files at its
    start) are not run again: "repeated edit". A reply cut inside a code block (`finish_reason`
    "length") is read as the agent reads it (harness/cut_replies.py)."""
    copy = make_copy(root)
    try:
        scratch = Workspace(copy)
        cut = cut_reply(text, finish_reason, fmt, scratch)
        if cut is not None and cut.text is None:
            return Trial(Outcome.CUT_OFF, why="reply cut off inside a code block")
        text, fmt = (text, fmt) if cut is None else (cut.text, cut.reader)
        if copied_placeholders(text):
            return Trial(Outcome.EXAMPLE_COPIED)
        try:
            edits = fmt.parse(text)
        except ValueError as exc:
            return Trial(Outcome.PARSE_FAILED, why=_first_line(exc))
        if not edits:
            return Trial(Outcome.NO_EDITS)
        edits, _ = repair_paths(edits, scratch, list(in_play))
        edits, _ = rebase_stale_blocks(edits, scratch, originals or {})
        edits, _ = repair_misnamed(edits, scratch, list(in_play))
        try:
            preview = fmt.apply(edits, scratch, dry_run=True)
            refused = refusal(preview, scratch, allow_test_edits, seen_in_part)
            if refused is not None:
                return Trial(refused[0], why=refused[1].splitlines()[0])
            state = code_state(scratch, originals or {}, preview.new_contents)
            if state in tried:
                return Trial(Outcome.REPEATED_EDIT)
            fmt.apply(edits, scratch)
        except NoChangesError as exc:  # REPLACE identical to SEARCH: the agent's outcome for it too
            return Trial(Outcome.NO_OP_EDIT, why=_first_line(exc))
        except ToolError as exc:
            return Trial(Outcome.APPLY_FAILED, why=_first_line(exc))
        result = run_tests(scratch, test_cmd, timeout=timeout, sandbox=sandbox)
        if result.ok:
            return Trial(Outcome.TESTS_PASS, 0, result.passed, state)
        # a failing command that counts nothing still failed
        return Trial(Outcome.TESTS_FAIL, (result.failed + result.errors) or 1, result.passed, state)
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


def _first_line(exc: Exception) -> str:
    return (str(getattr(exc, "message", None) or exc).strip().splitlines() or [type(exc).__name__])[0]


def choose(texts: list[str], trial: Callable[[str], Trial], earlier: list[str],
           per_choice: list[dict] | None = None) -> tuple[int, list[CandidateOutcome]]:
    """The index of the reply to keep and every candidate's outcome. Candidates are tried in order until
    one passes (the rest are "not tried"); a reply repeating an earlier step's is not tried again."""
    outcomes: list[CandidateOutcome] = []
    passed = False
    for i, text in enumerate(texts):
        own = per_choice[i] if per_choice and i < len(per_choice) else {}
        counts = {key: own.get(key) for key in ("completion_tokens", "decode_passes")} | {"reply": text}
        if passed:
            outcomes.append(CandidateOutcome(index=i, outcome=Outcome.NOT_TRIED, **counts))
        elif text.strip() in earlier or text.strip() in (t.strip() for t in texts[:i]):
            outcomes.append(CandidateOutcome(index=i, outcome=Outcome.REPEATED_REPLY, **counts))
        else:
            tried = trial(text)
            outcomes.append(CandidateOutcome(index=i, outcome=tried.outcome, failing=tried.failing,
                                             passed=tried.passed, why=tried.why, **counts))
            passed = tried.outcome == Outcome.TESTS_PASS
    best = min(outcomes, key=CandidateOutcome.rank)
    return best.index, outcomes
