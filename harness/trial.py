"""What the reply-to-edits pipeline (pipeline.py) reads, carries and returns.

`Context`: the run as it stands when a reply comes (read from the agent's RunState; a candidate's is the
same with its step's earlier candidates added). `Draft`: one reply on its way through the stages, which
refine it (a cut reply's complete part, repaired edits, the preview). `Trial`: what became of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from deltaserve.harness import feedback
from deltaserve.harness.config import AgentConfig
from deltaserve.harness.cut_replies import CutReply
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.tried_code import CodeState
from deltaserve.tools.patch import PatchResult
from deltaserve.tools.tests import TestResult, is_test_path
from deltaserve.tools.workspace import Workspace


@dataclass(frozen=True)
class Context:
    workspace: Workspace  # read by every stage before the write: the run's own (a candidate's copy is alike)
    task: str
    test_cmd: str
    config: AgentConfig  # limits: max_tokens, allow_test_edits, dry_run, keep_worse_edits, output_tail_chars
    asked: object  # the step's EditFormat (a reply without edits is shown its instructions)
    numbered_context: bool = False  # the prompt numbers the lines it shows, so lookups answer likewise
    replies: tuple[str, ...] = ()  # the earlier replies, stripped
    in_play: tuple[str, ...] = ()  # files the model has been shown that still exist
    seen_in_part: frozenset[str] = frozenset()  # shown only as an excerpt or head
    originals: Mapping[str, str | None] = field(default_factory=dict)  # touched files' text at the start
    tried: Mapping[CodeState, int] = field(default_factory=dict)  # code whose tests ran -> its step
    baseline: TestResult | None = None  # the tests of the code as it stands

    @property
    def code_in_play(self) -> list[str]:
        """in_play without the tests: where an edit naming a missing file may go."""
        return [p for p in self.in_play if not is_test_path(p)]

    @property
    def test_output(self) -> str:
        return self.baseline.output if self.baseline is not None else ""


@dataclass
class Draft:
    original: str  # the reply as sent
    finish_reason: str | None
    reader: object  # the EditFormat that reads and applies it
    text: str = ""  # what of it is read (a reply cut inside a block: its complete definitions)
    cut: CutReply | None = None
    edits: list = field(default_factory=list)
    moved: list = field(default_factory=list)  # edits re-aimed at another file (path_repair.Moved)
    rebased: list = field(default_factory=list)  # SEARCH blocks re-read against the file as it now is
    preview: PatchResult | None = None
    old: dict[str, str | None] = field(default_factory=dict)  # the previewed files' text now (None: absent)
    state: CodeState | None = None  # the code once the previewed edits are written

    def __post_init__(self):
        self.text = self.text or self.original

    def notes(self, max_tokens: int) -> list[str]:
        """What the model is told first about how its edits were read, so that next time it names the real
        file and its lines as they are."""
        said = [feedback.cut_definitions(max_tokens, self.cut.left_out) if self.cut is not None else "",
                feedback.moved_edits(self.moved) if self.moved else "",
                feedback.rebased_blocks(self.rebased) if self.rebased else ""]
        return [s for s in said if s]

    def edited_paths(self) -> list[str]:
        """The files the edits name (unified-diff edits are text and name theirs inside)."""
        return list(dict.fromkeys(e.path for e in self.edits if hasattr(e, "path")))


@dataclass(frozen=True)
class Trial:
    outcome: Outcome
    feedback: str = ""  # what the model is told
    error: str | None = None  # what the apply outcome records for edits that went no further
    result: PatchResult | None = None  # the edits written (or previewed, in a dry run)
    tests: TestResult | None = None  # the tests run on them
    state: CodeState | None = None  # the code written (None: nothing was)
    undone: bool = False  # written, then undone: the tests came out worse
    viewed: tuple[str, ...] = ()  # files a lookup showed in full

    @property
    def why(self) -> str | None:
        """The first line of the error that stopped the edits."""
        lines = (self.error or "").strip().splitlines()
        return lines[0] if lines else None

    @property
    def failing(self) -> int | None:
        """Failed + erroring tests after the edits (a failing command that counts nothing still failed)."""
        if self.tests is None:
            return None
        return 0 if self.tests.ok else (self.tests.failed + self.tests.errors) or 1

    @property
    def passed(self) -> int | None:
        return None if self.tests is None else self.tests.passed
