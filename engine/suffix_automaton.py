"""An online suffix automaton over a growing token list: the index behind the suffix drafter.

Each state stands for the set of substrings that end at the same positions; `link` points to the state
of the longest shorter suffix that ends at more positions. Appending a token costs amortized O(1) (the
textbook construction), so a request's automaton is extended by the tokens it accepts, never rebuilt.

Two questions it answers in O(1) amortized per token:
- `extend(tok)`: after appending, the longest suffix of the text that also ends *earlier*, and where
  (the state `link(last)`; the earlier end is the latest one we recorded for it);
- `follow(state, length, tok)`: matching statistics of another text against this one (the longest
  suffix of that text, one token longer, that occurs here), as used by the global store.

`end[s]` is the index of the last token of one occurrence of state s's strings. New occurrences refresh
it for the few states nearest the new token (a bounded walk up the links), so it is usually the latest
occurrence, and always a real one.
"""

from __future__ import annotations

REFRESH_STATES = 8  # link-path states whose `end` moves to the newest occurrence (longer ones matter most)


class SuffixAutomaton:
    __slots__ = ("trans", "link", "length", "end", "last", "size")

    def __init__(self) -> None:
        self.trans: list[dict[int, int]] = [{}]
        self.link: list[int] = [-1]
        self.length: list[int] = [0]
        self.end: list[int] = [-1]
        self.last = 0  # the state of the whole text
        self.size = 0  # tokens appended

    def extend(self, tok: int) -> tuple[int, int]:
        """Append `tok`. Returns (length, end) of the longest suffix of the text that also ends earlier,
        `end` being the index of its last token there; (0, -1) when even `tok` is new."""
        trans, link, length, end = self.trans, self.link, self.length, self.end
        i = self.size
        self.size += 1
        cur = len(length)
        trans.append({})
        length.append(length[self.last] + 1)
        link.append(0)
        end.append(i)
        p = self.last
        while p != -1 and tok not in trans[p]:
            trans[p][tok] = cur
            p = link[p]
        u = 0
        if p != -1:
            q = trans[p][tok]
            if length[p] + 1 == length[q]:
                u = q
            else:  # q also holds longer strings that never end here: split off the shorter ones
                u = len(length)
                trans.append(dict(trans[q]))
                length.append(length[p] + 1)
                link.append(link[q])
                end.append(end[q])
                while p != -1 and trans[p].get(tok) == q:
                    trans[p][tok] = u
                    p = link[p]
                link[q] = u
            link[cur] = u
        self.last = cur
        if u == 0:
            return 0, -1
        found = length[u], end[u]
        p, steps = u, 0
        while p > 0 and steps < REFRESH_STATES:  # these now also end at i, the newest occurrence
            end[p] = i
            p = link[p]
            steps += 1
        return found

    def follow(self, state: int, matched: int, tok: int) -> tuple[int, int]:
        """One step of matching statistics: (state, matched) describe the longest suffix of some text
        that occurs here; returns the same for that text with `tok` appended ((0, 0): none)."""
        trans, link, length = self.trans, self.link, self.length
        while state and tok not in trans[state]:
            state = link[state]
            matched = length[state]
        nxt = trans[state].get(tok)
        if nxt is None:
            return 0, 0
        return nxt, matched + 1

    def __len__(self) -> int:
        return self.size
