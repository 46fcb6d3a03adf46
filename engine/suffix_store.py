"""The suffix drafter's memory across requests: recent outputs of this engine's model, one automaton per
`cache_salt` (tenants never draft from each other's text), least recently used outputs evicted first once
all salts together hold more than `max_tokens`.

Outputs are concatenated per salt with a unique negative separator after each, so no match runs from one
output into the next and a draft stops at an output's end. An automaton cannot forget, so an evicted
output stays in its salt's automaton (still only that salt's text) until the evicted tokens outnumber the
live ones; then the automaton is rebuilt from the live outputs. That bounds memory by about twice the
budget at an amortized O(1) rebuild cost per stored token.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from dataclasses import dataclass, field

from deltaserve.engine.suffix_automaton import SuffixAutomaton


@dataclass
class SaltIndex:
    """One salt's outputs: their automaton, its text, where each output starts, and a version that
    changes whenever the automaton does (matchers then re-match)."""

    sam: SuffixAutomaton = field(default_factory=SuffixAutomaton)
    text: list[int] = field(default_factory=list)
    starts: list[int] = field(default_factory=list)  # ascending text offsets of the outputs
    ids: list[int] = field(default_factory=list)  # the entry id of each output, in the same order
    live: int = 0
    dead: int = 0
    version: int = 0

    def append(self, entry_id: int, tokens: list[int]) -> None:
        self.starts.append(len(self.text))
        self.ids.append(entry_id)
        for t in tokens:
            self.sam.extend(t)
        self.sam.extend(-1 - entry_id)
        self.text.extend(tokens)
        self.text.append(-1 - entry_id)
        self.live += len(tokens)
        self.version += 1

    def continuation(self, end: int, k: int) -> list[int]:
        """Up to k tokens after text index `end`, stopping at the output's end."""
        out = self.text[end + 1:end + 1 + k]
        for i, t in enumerate(out):
            if t < 0:
                return out[:i]
        return out

    def entry_at(self, offset: int) -> int:
        return self.ids[bisect.bisect_right(self.starts, offset) - 1]


class SuffixStore:
    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self.salts: dict[str | None, SaltIndex] = {}
        self._entries: OrderedDict[int, tuple[str | None, list[int]]] = OrderedDict()  # LRU first
        self._next_id = 0
        self.tokens = 0  # live tokens over all salts

    def add(self, salt: str | None, tokens: list[int]) -> None:
        if not tokens or len(tokens) > self.max_tokens:
            return
        entry_id = self._next_id
        self._next_id += 1
        self._entries[entry_id] = (salt, list(tokens))
        self.salts.setdefault(salt, SaltIndex()).append(entry_id, tokens)
        self.tokens += len(tokens)
        while self.tokens > self.max_tokens:
            self._evict_oldest()

    def get(self, salt: str | None) -> SaltIndex | None:
        return self.salts.get(salt)

    def touch(self, salt: str | None, offset: int) -> None:
        """The output holding text offset `offset` of `salt` was drafted from: it is recently used."""
        index = self.salts.get(salt)
        if index is not None:
            entry_id = index.entry_at(offset)
            if entry_id in self._entries:
                self._entries.move_to_end(entry_id)

    def clear(self) -> None:
        self.salts.clear()
        self._entries.clear()
        self.tokens = 0

    def _evict_oldest(self) -> None:
        _, (salt, tokens) = self._entries.popitem(last=False)
        self.tokens -= len(tokens)
        index = self.salts[salt]
        index.live -= len(tokens)
        index.dead += len(tokens)
        if index.dead > index.live:
            self._rebuild(salt, index.version)

    def _rebuild(self, salt: str | None, version: int) -> None:
        fresh = SaltIndex(version=version)
        for entry_id, (s, tokens) in self._entries.items():
            if s == salt:
                fresh.append(entry_id, tokens)
        if fresh.live:
            fresh.version += 1
            self.salts[salt] = fresh
        else:
            del self.salts[salt]
