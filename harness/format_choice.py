"""`--format auto`: per step, the edit format with the lowest expected decode cost.

A reply's cost is its decode passes. Text the model writes anew costs one pass a token; text it copies
(unchanged lines of a re-typed file or function, the context and SEARCH lines of a diff) costs a fraction
of a pass on a local engine, whose drafts (Predicted Outputs, prompt lookup) accept a run of copied tokens
in one pass, and a full pass elsewhere. An attempt whose edits do not apply is wasted, so

    expected passes(format) = (overhead + new + copy_cost * copied) / p(format applies)

with, for a file of S tokens, L tokens a line and definitions of D tokens (the median in the files in play),
and an edit writing E new tokens (unknown before the reply: EDIT_TOKENS, a couple of lines):

    whole           copied S                           overhead: path + fence
    symbol          copied D (non-Python: as search_replace)
    search_replace  copied E + 2 context lines, twice  overhead: the markers
    udiff           copied E + 6 context lines         overhead: headers and @@ line

p(format) is the run's own apply-success rate of that format so far, starting from a prior worth
PRIOR_WEIGHT replies: measured for a model we have measured (MEASURED_PRIORS), else PRIOR (re-typing formats
need no exact copy, so their prior is higher). The thresholds follow from the model: whole wins for tiny
files, symbol once files outgrow a definition, a diff format once the model's diffs have been applying and
definitions are long.
"""

from __future__ import annotations

import ast
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from deltaserve.harness.outcomes import Outcome

EDIT_TOKENS = 40  # new tokens in a typical fix (a line or two)
CONTEXT_LINES = {"search_replace": 2, "udiff": 6}  # unchanged lines an edit of that format repeats
OVERHEAD_TOKENS = {"whole": 10, "symbol": 12, "search_replace": 24, "udiff": 36}
PRIOR = {"whole": 0.8, "symbol": 0.8, "search_replace": 0.5, "udiff": 0.5}
# Share of a model's replies in each format whose edits changed the code (the tests ran), repeated replies
# left out: the "Replies per edit format" table of `deltaserve eval report`. Qwen2.5-Coder-1.5B-Instruct over
# the 24 a-/b- tasks, 3 steps, every run of sessions 13 (int4: each format and auto) and 14 (w8a8: auto x1,
# x4) merged: search_replace 97/341, symbol 63/145, udiff 4/18; whole 10/17 on files a reply can hold (its
# other misses were `--formats whole` on ~9,000-token files shown as excerpts, a case auto never picks).
# Until session 15 these were the 5-task figures of the first runs (symbol 0.35, search_replace 0.5), so
# auto asked for SEARCH/REPLACE first, the format this model applies least often.
MEASURED_PRIORS = {
    "qwen2.5-coder-1.5b": {"whole": 0.59, "symbol": 0.43, "search_replace": 0.28, "udiff": 0.22},
}
PRIOR_WEIGHT = 2.0
# passes per copied token with drafting: re-typed files and functions took 0.11-0.12 passes a token on our
# engine (Predicted Outputs, same eval runs: 180 tokens in 21 passes, 2,509 in 296)
LOCAL_COPY_COST = 0.12
CHOICES = tuple(PRIOR)


@dataclass(frozen=True)
class FileStats:
    tokens: int
    tokens_per_line: float
    definition_tokens: float | None  # median top-level function/class/method size; None: not Python


def file_stats(path: str, text: str, count: Callable[[str], int]) -> FileStats:
    tokens = count(text)
    lines = max(1, text.count("\n"))
    per_line = tokens / lines
    sizes = []
    if path.endswith(".py"):
        try:
            tree = ast.parse(text)
        except SyntaxError:
            tree = None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                sizes.append((node.end_lineno - node.lineno + 1) * per_line)
    return FileStats(tokens, per_line, statistics.median(sizes) if sizes else None)


def priors_for(model: str) -> dict[str, float]:
    """The measured priors of `model` (a bundled name, with or without its provider prefix), else PRIOR."""
    return MEASURED_PRIORS.get(model.rsplit("/", 1)[-1], PRIOR)


def success_rate(fmt: str, history: list[tuple[str, bool]], prior: dict[str, float] = PRIOR) -> float:
    """p(fmt applies): its prior, updated by this run's (format, applied) outcomes."""
    applied = sum(ok for f, ok in history if f == fmt)
    tried = sum(1 for f, _ in history if f == fmt)
    return (prior[fmt] * PRIOR_WEIGHT + applied) / (PRIOR_WEIGHT + tried)


def attempt_cost(fmt: str, stats: FileStats, copy_cost: float) -> float:
    """Decode passes of one reply in `fmt` editing a file with these stats."""
    copied = {
        "whole": stats.tokens,
        "symbol": stats.definition_tokens or 0.0,
        "search_replace": 2 * (EDIT_TOKENS + CONTEXT_LINES["search_replace"] * stats.tokens_per_line),
        "udiff": EDIT_TOKENS + CONTEXT_LINES["udiff"] * stats.tokens_per_line,
    }[fmt]
    return OVERHEAD_TOKENS[fmt] + EDIT_TOKENS + copy_cost * max(0.0, copied - EDIT_TOKENS)


def choose_format(files: list[FileStats], history: list[tuple[str, bool]], local: bool,
                  avoid: list[str] = (), prior: dict[str, float] = PRIOR) -> tuple[str, str]:
    """(format, reason): the cheapest expected format for the files in play (the largest decides: an edit
    can land anywhere in it), with the costs compared; none of `avoid` (formats whose replies have been
    changing nothing) while another is left. `prior`: p(apply) before the run's own outcomes."""
    copy_cost = LOCAL_COPY_COST if local else 1.0
    stats = max(files, key=lambda f: f.tokens) if files else FileStats(0, 10.0, None)
    # `symbol` edits other languages with SEARCH/REPLACE: offered only for Python files
    choices = [f for f in CHOICES if f != "symbol" or stats.definition_tokens is not None]
    choices = [f for f in choices if f not in avoid] or choices
    expected = {f: attempt_cost(f, stats, copy_cost) / success_rate(f, history, prior) for f in choices}
    best = min(expected, key=expected.get)
    costs = ", ".join(f"{f} {expected[f]:.0f}" for f in sorted(expected, key=expected.get))
    reason = (f"expected decode passes {costs} (file {stats.tokens} tokens, "
              f"p(apply) {best} {success_rate(best, history, prior):.2f})")
    if avoid:
        reason += f"; not {', '.join(avoid)}: its replies changed nothing"
    return best, reason


class FormatPlan:
    """The per-step choice for one run of `model`: the run's history of (format, applied)."""

    def __init__(self, count: Callable[[str], int], local: bool, model: str = ""):
        self.count = count
        self.local = local
        self.prior = priors_for(model)
        self.history: list[tuple[str, bool]] = []
        self._stats: dict[tuple[str, int], FileStats] = {}

    def record(self, fmt: str, outcome: Outcome | str) -> None:
        """One step's reply in `fmt`, where its outcome says whether the format's edits applied."""
        applied = Outcome(outcome).applied
        if applied is not None:
            self.history.append((fmt, applied))

    def choose(self, files: dict[str, str], avoid: list[str] = ()) -> tuple[str, str]:
        """(format, reason) for the next reply, given the files in play (path -> text), none of `avoid`
        while another is left."""
        stats = []
        for path, text in files.items():
            key = (path, hash(text))
            if key not in self._stats:
                self._stats[key] = file_stats(path, text, self.count)
            stats.append(self._stats[key])
        return choose_format(stats, self.history, self.local, avoid, self.prior)
