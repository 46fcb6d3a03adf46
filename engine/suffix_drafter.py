"""Suffix drafts (after SuffixDecoding): the longest match of the sequence's tail, in its own text or in
recent outputs of the same model, proposes what followed it there, for as many tokens as the match earns.

Two indexes per request, both suffix automata (engine/suffix_automaton.py), extended by the tokens the
request accepts (never rebuilt per step):
- its own prompt + output: the longest suffix of the sequence that also ended earlier, and the tokens
  after that earlier occurrence (an overlapping copy when it runs into the tail, as in LZ77);
- the global store (engine/suffix_store.py): outputs of finished requests with the same `cache_salt`,
  matched incrementally (matching statistics); re-matched from the last `REMATCH` tokens whenever the
  store changes.

The longer match wins (a tie goes to the request's own text). Draft length adapts:
- to the match: `factor * match length` tokens (a long match is a copy in progress; one or two matching
  tokens are weak evidence), capped by `max_tokens`;
- to this request's running acceptance rate and what a draft token costs here (engine/draft_budget.py):
  a draft stops where reaching its next token stops paying; when nothing pays, a match at least
  `confident_match` long still probes with a short draft, so the rate can recover when copying starts
  again. Text with nothing to copy thus stops paying for rejected drafts.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from deltaserve.engine.draft_budget import PROBE_TOKENS, AcceptanceRate, DraftCost
from deltaserve.engine.sequence import Sequence
from deltaserve.engine.suffix_automaton import SuffixAutomaton
from deltaserve.engine.suffix_store import SaltIndex, SuffixStore

SOURCE = "suffix"
REMATCH = 48  # tokens of the tail re-matched against a changed store (longer matches gain nothing more)


@dataclass
class SuffixOptions:
    max_tokens: int = 32
    factor: float = 4.0
    min_match: int = 2
    confident_match: int = 12
    store_tokens: int = 65536


@dataclass
class _RequestState:
    sam: SuffixAutomaton = field(default_factory=SuffixAutomaton)
    match_len: int = 0  # the longest suffix of the sequence that ended earlier in it ...
    match_end: int = -1  # ... and the index of its last token there
    index: SaltIndex | None = None  # the store's index for this salt as last matched
    version: int = -1
    g_state: int = 0
    g_len: int = 0
    rate: AcceptanceRate = field(default_factory=AcceptanceRate)  # of this request's suffix drafts


class SuffixDrafter:
    def __init__(self, options: SuffixOptions | None = None, cost: DraftCost | None = None) -> None:
        self.options = options or SuffixOptions()
        self.cost = cost or DraftCost()
        self.store = SuffixStore(self.options.store_tokens)
        self._states: weakref.WeakKeyDictionary[Sequence, _RequestState] = weakref.WeakKeyDictionary()

    def propose(self, seq: Sequence, k: int) -> list[int]:
        """Up to k draft tokens; the caller marks them as this drafter's."""
        st = self._states.get(seq)
        if st is None:
            st = self._states[seq] = _RequestState()
        tokens = seq.token_ids
        new = tokens[st.sam.size:]
        self._extend_local(st, new)
        self._match_global(st, seq.cache_salt, tokens, new)
        rate = st.rate.update(seq, SOURCE)
        o = self.options
        use_global = st.g_len > st.match_len
        m = st.g_len if use_global else st.match_len
        if m < o.min_match or k <= 0:
            return []
        budget = self.cost.best_drafts(rate, o.max_tokens)
        if budget < 1:
            if m < o.confident_match:
                return []
            budget = PROBE_TOKENS
        n = min(k, o.max_tokens, max(1, int(m * o.factor)), budget)
        if use_global:
            end = st.index.sam.end[st.g_state]
            self.store.touch(seq.cache_salt, end)
            return st.index.continuation(end, n)
        return copy_after(tokens, st.match_end + 1, n)

    def finished(self, seq: Sequence) -> None:
        """A request ended: a complete output joins its salt's history."""
        self._states.pop(seq, None)
        if seq.finish_reason in ("stop", "length") and seq.num_output_tokens >= self.options.min_match:
            self.store.add(seq.cache_salt, seq.output_token_ids)

    def clear_history(self) -> None:
        self.store.clear()

    @staticmethod
    def _extend_local(st: _RequestState, new: list[int]) -> None:
        extend = st.sam.extend
        for tok in new:
            st.match_len, st.match_end = extend(tok)

    def _match_global(self, st: _RequestState, salt: str | None, tokens: list[int], new: list[int]) -> None:
        index = self.store.get(salt)
        if index is None:
            st.index, st.g_state, st.g_len = None, 0, 0
            return
        if index is not st.index or index.version != st.version:
            st.index, st.version, st.g_state, st.g_len = index, index.version, 0, 0
            new = tokens[-REMATCH:]
        follow, state, matched = index.sam.follow, st.g_state, st.g_len
        for tok in new:
            state, matched = follow(state, matched, tok)
        st.g_state, st.g_len = state, matched


def copy_after(tokens: list[int], start: int, n: int) -> list[int]:
    """n tokens from index `start` on; past the tail the copy repeats itself (as in LZ77: a loop in
    progress)."""
    L = len(tokens)
    draft: list[int] = []
    for i in range(start, start + n):
        draft.append(tokens[i] if i < L else draft[i - L])
    return draft
