"""The pool's free KV blocks, handed out so that a sequence's blocks tend to follow each other.

`take(after)` returns the block right after `after` when that one is free, else the lowest-numbered free
block. A request then usually holds one run of consecutive blocks, which batch-1 decode attention reads as
a view of the pool instead of gathering its whole context once per layer and token (engine/model.py). A
heap gives the lowest block; a set says what is free (a block taken out of order leaves a stale heap entry,
skipped when popped).
"""

from __future__ import annotations

import heapq


class FreeBlocks:
    def __init__(self, num_blocks: int):
        self._heap = list(range(num_blocks))
        self._free = set(self._heap)

    def __len__(self) -> int:
        return len(self._free)

    def add(self, block: int) -> None:
        self._free.add(block)
        heapq.heappush(self._heap, block)
        if len(self._heap) > 2 * len(self._free) + 64:  # drop the stale entries now and then
            self._heap = sorted(self._free)

    def take(self, after: int | None = None) -> int:
        """A free block: after + 1 when free, else the lowest free one (IndexError when none is free)."""
        if after is not None and after + 1 in self._free:
            self._free.remove(after + 1)
            return after + 1
        while True:
            block = heapq.heappop(self._heap)
            if block in self._free:
                self._free.remove(block)
                return block
