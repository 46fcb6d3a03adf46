"""Speculative decoding drafts: Predicted Outputs, prompt lookup (n-grams of the context) and suffix drafts.

Edits copy most of their text from the prompt (diff context lines, SEARCH blocks, the unchanged parts of
a rewritten file), so the tokens that followed an earlier occurrence of the last few tokens are good
guesses for what comes next. The engine (engine/engine.py) calls `propose(seq)` before a step; the
drafts ride in the same forward pass as the sequence's next token (a verify span), the longest prefix
the target agrees with is kept plus the model's own next token, and the KV of the rest is rolled back.

Draft sources, tried in order; the request's method (`SamplingParams.speculative`, else the engine's
`EngineConfig.speculative`) picks the second one, "off" drafts nothing:
- `prediction` (OpenAI Predicted Outputs, e.g. the original file for a whole-file reply): followed by
  *position*. A cursor marks where the output stands in the predicted text; while the output follows it
  the next k predicted tokens are proposed, and after the output departs from it (an edited line) the
  cursor resyncs on the first later occurrence of the output's last n tokens, so one long prediction
  keeps paying off after every edit.
- "ngram" (prompt lookup): the latest earlier occurrence of the last n tokens of prompt + output (n from
  prompt_lookup_max down to prompt_lookup_min), found in an incrementally built n-gram index (no rescans
  of a long prompt); up to num_speculative_tokens long.
- "suffix" (engine/suffix_drafter.py): the longest match in the request's own text or in recent outputs
  with the same cache_salt, drafting as far as the match length and the request's acceptance rate earn.

Each draft is cut where it stops paying (engine/draft_budget.py: the request's acceptance rate for that
source against a draft row's measured cost). Each proposal marks its source in `seq.draft_source`, so the
engine counts drafts by drafter.

Acceptance is exact (engine._advance): at each draft position the engine picks the token the target
would emit there (argmax, forced token, or a sample) and keeps the draft iff it is that token. For a
deterministic draft this *is* standard speculative sampling with a one-hot draft distribution q: the
draft d is kept with probability min(1, p(d)/q(d)) = p(d), and on rejection the token is distributed as
norm(max(0, p - q)) = p without d. `accept_draft` below is that textbook rule, kept for the tests that
check the two agree.

Exactness holds to the last bit in float32; in bfloat16 a k+1-row verify pass rounds differently from a
1-row decode pass (as batching does), so a near-tie can flip a greedy token (seen once in 4 open-ended
100-token answers of `deltaserve bench spec`).
"""

from __future__ import annotations

import bisect
import weakref
from dataclasses import dataclass, field

import torch

from deltaserve.engine.config import SPECULATIVE_METHODS
from deltaserve.engine.draft_budget import PROBE_TOKENS, AcceptanceRate, DraftCost
from deltaserve.engine.sequence import Sequence
from deltaserve.engine.suffix_drafter import SuffixDrafter, SuffixOptions, copy_after
from deltaserve.errors import EngineError


@dataclass
class _NgramIndex:
    """n-gram -> end position (exclusive) of its latest occurrence in a growing token list, for each n
    in [n_min, n_max]. Covers every occurrence that ends before the list's last token, so a lookup of
    the list's own tail finds an *earlier* occurrence."""

    n_min: int
    n_max: int
    latest: dict[tuple[int, ...], int] = field(default_factory=dict)
    upto: int = 0  # occurrences ending at positions <= upto are indexed

    def update(self, tokens: list[int]) -> None:
        last = len(tokens) - 1
        for end in range(max(self.upto + 1, 1), last + 1):
            for n in range(self.n_min, min(self.n_max, end) + 1):
                self.latest[tuple(tokens[end - n:end])] = end
        self.upto = max(self.upto, last)

    def match(self, tokens: list[int]) -> tuple[int, int]:
        """(n, end): the longest n-gram ending the list that occurred earlier, and where it ended; (0, -1)."""
        L = len(tokens)
        for n in range(min(self.n_max, L - 1), self.n_min - 1, -1):
            end = self.latest.get(tuple(tokens[L - n:]))
            if end is not None:
                return n, end
        return 0, -1

    def lookup(self, tokens: list[int], k: int) -> list[int]:
        n, end = self.match(tokens)
        return copy_after(tokens, end, k) if n else []


@dataclass
class _Prediction:
    """A predicted text's tokens, their n-gram positions, and the cursor that follows the output."""

    tokens: list[int]
    ends: dict[tuple[int, ...], list[int]]  # n-gram -> ascending end positions (exclusive)
    cursor: int = 0  # where the output stood in the prediction at the last proposal
    mark: int = 0  # len(seq.token_ids) at the last proposal

    @classmethod
    def build(cls, tokens: list[int], n_min: int, n_max: int, mark: int) -> _Prediction:
        ends: dict[tuple[int, ...], list[int]] = {}
        for end in range(1, len(tokens) + 1):
            for n in range(n_min, min(n_max, end) + 1):
                ends.setdefault(tuple(tokens[end - n:end]), []).append(end)
        return cls(tokens, ends, 0, mark)

    def propose(self, tokens: list[int], n_min: int, n_max: int, k: int) -> list[int]:
        L = len(tokens)
        new = tokens[self.mark:L]
        self.mark = L
        ahead = self.tokens[self.cursor:self.cursor + len(new)]
        diffs = (i for i, (a, b) in enumerate(zip(new, ahead, strict=False)) if a != b)
        same = next(diffs, min(len(new), len(ahead)))
        self.cursor += same  # the output followed the prediction this far
        if same < len(new):
            found = self._resync(tokens, n_min, n_max)
            if found is None:  # new text (an inserted line): wait where we are for the output to come back
                return []
            self.cursor = found
        return self.tokens[self.cursor:self.cursor + k]

    def _resync(self, tokens: list[int], n_min: int, n_max: int) -> int | None:
        """The output left the prediction: find its last n tokens again, preferring the first occurrence
        at or after the cursor (edits move forward through the text); else the latest before it."""
        L = len(tokens)
        for n in range(min(n_max, L), n_min - 1, -1):
            ends = self.ends.get(tuple(tokens[L - n:]))
            if ends:
                i = bisect.bisect_left(ends, self.cursor)
                return ends[i] if i < len(ends) else ends[-1]
        return None


@dataclass
class _SeqState:
    prediction: _Prediction | None
    context: _NgramIndex | None = None  # built on the first n-gram proposal
    rates: dict[str, AcceptanceRate] = field(default_factory=dict)  # per draft source

    def budget(self, seq: Sequence, source: str, cost: DraftCost, cap: int) -> int:
        """Draft tokens from `source` worth verifying for this request now (engine/draft_budget.py)."""
        rate = self.rates.setdefault(source, AcceptanceRate()).update(seq, source)
        return cost.best_drafts(rate, cap)


class SpeculativeDrafter:
    """Proposes draft tokens for a decoding sequence: its prediction first, then its method's drafter."""

    def __init__(self, tokenizer, num_speculative_tokens: int, n_min: int, n_max: int, method: str = "ngram",
                 suffix: SuffixOptions | None = None, cost: DraftCost | None = None):
        if n_min > n_max:
            raise EngineError(f"prompt_lookup_min ({n_min}) > prompt_lookup_max ({n_max})")
        if method not in SPECULATIVE_METHODS:
            raise EngineError(
                f"unknown speculative method {method!r}; known: {', '.join(SPECULATIVE_METHODS)}")
        self.tokenizer = tokenizer
        self.k = num_speculative_tokens
        self.n_min, self.n_max = n_min, n_max
        self.method = method
        self.cost = cost or DraftCost()  # the engine times its passes into it
        self.suffix = SuffixDrafter(suffix, self.cost)
        self.max_draft_tokens = max(self.k, self.suffix.options.max_tokens)
        self._states: weakref.WeakKeyDictionary[Sequence, _SeqState] = weakref.WeakKeyDictionary()

    def _state(self, seq: Sequence) -> _SeqState:
        st = self._states.get(seq)
        if st is None:
            pred = None
            if seq.params.prediction:
                ids = self.tokenizer.encode(seq.params.prediction, add_special_tokens=False)
                pred = _Prediction.build(list(ids), self.n_min, self.n_max, seq.num_prompt_tokens)
            st = self._states[seq] = _SeqState(pred)
        return st

    def method_of(self, seq: Sequence) -> str:
        return seq.params.speculative or self.method

    def max_drafts(self, seq: Sequence, k: int | None = None) -> int:
        """No draft past what the request may still emit: max_tokens, and forced tokens left."""
        room = min(self.k if k is None else k, seq.params.max_tokens - seq.num_output_tokens - 1)
        forced = seq.params.forced_token_ids
        if forced is not None:
            room = min(room, len(forced) - seq.num_output_tokens - 1)
        return max(0, room)

    def propose(self, seq: Sequence) -> list[int]:
        method = self.method_of(seq)
        seq.draft_source = None
        if method == "off":
            return []
        k = self.max_drafts(seq)
        st = self._state(seq)
        tokens = seq.token_ids
        if st.prediction is not None:  # keep the cursor moving even when nothing may be drafted
            # the request's own prediction always probes with one token: it says the output follows it
            budget = max(1, st.budget(seq, "prediction", self.cost, k)) if k else 0
            draft = st.prediction.propose(tokens, self.n_min, self.n_max, k)[:budget]
            if draft:
                seq.draft_source = "prediction"
                return draft
        if method == "suffix":
            draft = self.suffix.propose(seq, self.max_drafts(seq, self.max_draft_tokens))
        elif k:
            if st.context is None:
                st.context = _NgramIndex(self.n_min, self.n_max)
            st.context.update(tokens)
            n, end = st.context.match(tokens)
            budget = st.budget(seq, "ngram", self.cost, k)
            if not budget and n == self.n_max:  # a long match probes even when drafts stopped paying
                budget = min(k, PROBE_TOKENS)
            draft = copy_after(tokens, end, budget) if n and budget else []
        else:
            draft = []
        if draft:
            seq.draft_source = method
        return draft

    def finished(self, seq: Sequence) -> None:
        """The engine is done with `seq`: a suffix-method request's output joins the drafter's history."""
        self._states.pop(seq, None)
        if self.method_of(seq) == "suffix":
            self.suffix.finished(seq)

    def clear_history(self) -> None:
        """Forget the outputs of earlier requests (benchmarks start each workload from none)."""
        self.suffix.clear_history()


def make_drafter(engine) -> SpeculativeDrafter:
    c = engine.config
    suffix = SuffixOptions(max_tokens=c.suffix_max_draft_tokens, store_tokens=c.suffix_history_tokens)
    cost = DraftCost(pinned=c.draft_token_cost)
    return SpeculativeDrafter(engine.tokenizer, c.num_speculative_tokens, c.prompt_lookup_min,
                              c.prompt_lookup_max, c.speculative, suffix, cost)


def accept_draft(probs: torch.Tensor, draft: int, generator: torch.Generator | None = None) -> int:
    """Textbook speculative sampling for one position with a one-hot draft distribution (q(draft) = 1):
    keep `draft` with probability min(1, p(draft) / q(draft)) = p(draft), else sample from the residual
    norm(max(0, p - q)). Returns the emitted token. The engine's sample-then-compare is equivalent."""
    u = torch.rand((), generator=generator, device=probs.device)
    if u < probs[draft]:
        return draft
    residual = probs.clone()
    residual[draft] = 0.0
    return int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
