"""Per-step and per-run accounting of prefill and decode tokens saved.

Inputs are measurements (what the provider or engine reported, tokens counted with the model's own
tokenizer); the savings are computed fields, so a report cannot carry numbers that disagree with them.
None means "the provider did not say" and is shown as "unknown" (never silently 0).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, computed_field

from deltaserve.harness.candidates import CandidateOutcome
from deltaserve.harness.formats import whole
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.prefix_monitor import PrefixBreak

TRACE_HEADER = "header"  # the `record` of a trace's first line, the run header (harness/trace.py)


class ApplyOutcome(BaseModel):
    ok: bool
    files_changed: list[str] = []
    # per hunk, how it matched: one of tools.patch.HUNK_STRATEGIES (exact, rstrip, ...)
    strategies: list[str] = []
    error: str | None = None  # the PatchError message the model was shown
    dry_run: bool = False
    undone: bool = False  # written, then undone: the tests came out worse (harness/regressions.py)


class TestOutcome(BaseModel):
    __test__ = False  # not a pytest class

    ok: bool
    exit_code: int | None = None
    passed: int = 0
    failed: int = 0
    errors: int = 0
    failing_tests: list[str] = []
    duration_s: float = 0.0
    timed_out: bool = False
    output_limit_exceeded: bool = False
    sandbox: str = ""  # where the tests ran (tools.sandbox: bwrap, none); "" in traces from before it existed
    not_run: str = ""  # why the command ran no test at all (tools.tests.TestResult.not_run); "": it ran tests

    @classmethod
    def from_result(cls, result) -> TestOutcome:
        """From a tools.tests.TestResult."""
        return cls(ok=result.ok, exit_code=result.exit_code, passed=result.passed, failed=result.failed,
                   errors=result.errors, failing_tests=list(result.failing_tests),
                   duration_s=result.duration_s, timed_out=result.timed_out,
                   output_limit_exceeded=result.output_limit_exceeded, sandbox=result.sandbox,
                   not_run=result.not_run)


def _sum(values: Iterable[int | float | None]) -> int | float | None:
    """Sum, or None when any term is unknown (a total over unknowns is unknown)."""
    total = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


class _Savings(BaseModel):
    """The savings formulas, written once for a step and for a run (whose token counts are sums of its
    steps')."""

    @computed_field
    @property
    def prefill_saved(self) -> int | None:
        return self.cached_tokens

    @computed_field
    @property
    def prefill_computed(self) -> int | None:
        # as counted by our engine where it says (several candidates of one prompt each compute the part of
        # it the prefix cache cannot hold: its last, partial block), else the prompt less its cached part
        if self.prefill_tokens_computed is not None:
            return self.prefill_tokens_computed
        return None if self.cached_tokens is None else self.prompt_tokens - self.cached_tokens

    @computed_field
    @property
    def decode_saved(self) -> int:
        # negative when the edit cost more than `whole`
        return self.whole_file_tokens - self.completion_tokens

    @computed_field
    @property
    def decode_passes_saved(self) -> int | None:
        # with drafting a reply costs its decode passes, not its tokens; the counterfactual is a plain decode
        # of the whole files, one pass per token. None: the provider did not report its passes.
        return None if self.decode_passes is None else self.whole_file_tokens - self.decode_passes


DECODED_CONSTRAINED = "constrained"
DECODED_WATCHED = "early stop"


class StepReport(_Savings):
    step: int
    action: str  # edit | view | grep | none
    outcome: Outcome | Literal[""] = ""  # written as its phrase: "tests pass", "apply failed", ...
    model: str = ""
    edit_format: str = ""

    prompt_tokens: int
    cached_tokens: int | None  # None: the provider did not report it
    cached_tokens_disk: int | None = None  # of cached_tokens, read from our engine's disk tier; None: unknown
    prefill_tokens_computed: int | None = None  # prompt tokens computed, every candidate's; None: not said
    completion_tokens: int
    whole_file_tokens: int = 0  # tokens of the `whole` reply carrying the same edits; 0 without edits
    decode_passes: int | None = None
    accepted_draft_tokens: int | None = None
    rejected_draft_tokens: int | None = None
    # of the decode passes, those that verified no draft and their seconds (our engine says; else None)
    plain_passes: int | None = None
    plain_pass_s: float | None = None
    ttft_s: float | None = None
    decode_s: float | None = None
    # this run's measured costs (see measured_rates), used for est_seconds_saved
    prefill_s_per_token: float | None = None
    decode_s_per_token: float | None = None

    apply: ApplyOutcome | None = None
    tests: TestOutcome | None = None
    reply: str = ""  # the reply kept (with several candidates: the one chosen)
    # where this step's prompt stopped extending the previous prompt + reply (harness/prefix_monitor.py);
    # None: it extended it (or step 1, or no tokenizer to check with)
    prefix_break: PrefixBreak | None = None
    # with several candidates, each one's outcome on its scratch copy; the token counts above cover them all
    candidates: list[CandidateOutcome] = []
    # the first reply repeated an earlier one and was asked for again (its tokens are counted above too)
    resampled: bool = False
    format_reason: str | None = None  # `auto`: why this step's format was chosen (expected costs compared)
    # how the reply was decoded: DECODED_CONSTRAINED (under the edits constraint, engine/constraints),
    # DECODED_WATCHED (streamed under the early-stop watch, harness/early_stop.py) or "" (plainly)
    decoding: str = ""
    # a reply stopped early: the decode tokens its max_tokens still allowed when it was cut. The most the
    # stop saved: left alone, the reply would have ended at its own end of text or at max_tokens
    decode_budget_unspent: int | None = None
    # why the reply ended, as the provider said: "stop", "length" (the token budget: cut, or on our engine
    # under the edits constraint, closed whole in time), EARLY_STOP (harness/early_stop.py), ...
    finish_reason: str | None = None

    @classmethod
    def from_completion(cls, completion, **fields) -> StepReport:
        """A report from a harness.client.Completion (any object with its fields) plus step, action, ..."""
        measured = {name: getattr(completion, name, None) for name in (
            "prompt_tokens", "cached_tokens", "completion_tokens", "decode_passes", "accepted_draft_tokens",
            "rejected_draft_tokens", "ttft_s", "decode_s")}
        engine_metrics = getattr(completion, "metrics", None) or {}  # our server's / local engine's extension
        measured["cached_tokens_disk"] = engine_metrics.get("cached_tokens_disk")
        measured["prefill_tokens_computed"] = engine_metrics.get("prefill_tokens_computed")
        measured["plain_passes"] = engine_metrics.get("plain_passes")
        if engine_metrics.get("plain_pass_ms") is not None:
            measured["plain_pass_s"] = engine_metrics["plain_pass_ms"] / 1000
        measured["prompt_tokens"] = measured["prompt_tokens"] or 0
        measured["completion_tokens"] = measured["completion_tokens"] or 0
        measured["finish_reason"] = getattr(completion, "finish_reason", None)
        return cls(**{**measured, "reply": getattr(completion, "text", ""), **fields})

    @computed_field
    @property
    def est_seconds_saved(self) -> float | None:
        return estimate_seconds_saved(self.prefill_saved, self.whole_file_tokens, self.decode_spent_s,
                                      self.prefill_s_per_token, self.decode_s_per_token)

    @property
    def decode_spent_s(self) -> float | None:
        """This reply's decode seconds as measured, else its tokens at the run's rate."""
        if self.decode_s is not None:
            return self.decode_s
        return None if self.decode_s_per_token is None else self.completion_tokens * self.decode_s_per_token


def estimate_seconds_saved(prefill_saved: int | None, whole_file_tokens: int, decode_spent_s: float | None,
                           prefill_s_per_token: float | None,
                           decode_s_per_token: float | None) -> float | None:
    """Prefill served from cache at the prefill rate, plus the whole-file reply decoded plainly (one token a
    pass at the decode rate) minus the decode seconds this reply took: with drafting a reply costs its
    passes, not its tokens, so it is its measured seconds that count."""
    if None in (prefill_saved, prefill_s_per_token, decode_s_per_token, decode_spent_s):
        return None
    return prefill_saved * prefill_s_per_token + whole_file_tokens * decode_s_per_token - decode_spent_s


def measured_rates(steps: Iterable[StepReport]) -> tuple[float | None, float | None]:
    """(prefill seconds per computed prompt token, decode seconds per plainly decoded token) over these steps.

    Prefill: sum of TTFT / sum of prompt tokens actually computed (the first token comes out of the prefill
    pass). Decode: the seconds of the passes that verified no draft / their count, where the engine says
    (a drafted token costs less, and the counterfactual whole-file reply is decoded without drafts); else
    sum of decode seconds / sum of tokens after the first. Steps lacking a number are skipped.
    """
    ttft = computed = decode_s = decoded = plain_s = plain = 0.0
    for s in steps:
        if s.ttft_s is not None and s.prefill_computed:
            ttft += s.ttft_s
            computed += s.prefill_computed
        if s.decode_s is not None and s.completion_tokens > 1:
            decode_s += s.decode_s
            decoded += s.completion_tokens - 1
        if s.plain_passes and s.plain_pass_s is not None:
            plain_s += s.plain_pass_s
            plain += s.plain_passes
    decode_rate = plain_s / plain if plain else (decode_s / decoded if decoded else None)
    return (ttft / computed if computed else None, decode_rate)


def _total(name: str, kind: type):
    """A RunReport field: the sum of that StepReport field over the steps (None when any step's is
    unknown)."""

    def total(self: RunReport):
        return _sum(getattr(s, name) for s in self.steps)

    total.__name__ = name
    return computed_field(property(total), return_type=kind)


class RunReport(_Savings):
    model: str = ""
    edit_format: str = ""
    initial_tests: TestOutcome | None = None
    suspects: list[str] = []  # `path:lines (in name)` of coverage's ranked suspects (tools/localize.py)
    steps: list[StepReport] = []
    stopped: str = ""  # why the run ended: "tests pass", "step budget (6) spent", ...
    final_diff: str = ""

    prompt_tokens = _total("prompt_tokens", int)
    cached_tokens = _total("cached_tokens", int | None)
    prefill_tokens_computed = _total("prefill_tokens_computed", int | None)
    completion_tokens = _total("completion_tokens", int)
    whole_file_tokens = _total("whole_file_tokens", int)
    decode_passes = _total("decode_passes", int | None)
    accepted_draft_tokens = _total("accepted_draft_tokens", int | None)
    rejected_draft_tokens = _total("rejected_draft_tokens", int | None)
    ttft_s = _total("ttft_s", float | None)
    decode_s = _total("decode_s", float | None)
    est_seconds_saved = _total("est_seconds_saved", float | None)

    @computed_field
    @property
    def solved(self) -> bool:
        return any(s.tests is not None and s.tests.ok for s in self.steps)

    @computed_field
    @property
    def cache_hit_rate(self) -> float | None:
        if self.cached_tokens is None or not self.prompt_tokens:
            return None
        return self.cached_tokens / self.prompt_tokens

    @classmethod
    def from_trace(cls, path: str | Path) -> RunReport:
        """Rebuild a run from its JSONL trace (the run header record, then one StepReport per line; a torn
        last line, left by a run that was interrupted mid-write, is skipped)."""
        lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        header, steps = {}, []
        for number, line in enumerate(lines, 1):
            try:
                record = json.loads(line)
                if isinstance(record, dict) and record.get("record") == TRACE_HEADER:
                    header = record
                else:
                    steps.append(StepReport.model_validate(record))
            except ValueError:
                if number < len(lines):
                    raise
        first = steps[0] if steps else None
        return cls(model=first.model if first else header.get("model", ""),
                   edit_format=first.edit_format if first else header.get("edit_format", ""), steps=steps)


def whole_file_tokens(new_contents: dict[str, str | None], count) -> int:
    """Tokens of the `whole` reply carrying edits whose post-edit files are `new_contents` (PatchResult's)."""
    return count(whole.render(new_contents)) if new_contents else 0
