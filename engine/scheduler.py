"""Continuous batching with chunked prefill and preemption by recompute.

Every step is one forward pass. Running sequences go first (oldest first), each asking for the tokens
it has not computed yet: one for a decoding sequence (plus its speculative drafts), the next chunk for a
sequence still prefilling. Waiting sequences are then admitted while the token budget
(max_num_batched_tokens) and the batch cap (max_num_seqs) allow; on admission a sequence first takes
whatever prefix the cache already holds. When the block pool runs dry the newest running sequence is
preempted: its blocks are freed (its full blocks stay cached) and it goes back to the queue to be
recomputed later.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from deltaserve.engine.config import EngineConfig
from deltaserve.engine.prefix_cache import BlockManager
from deltaserve.engine.sequence import Sequence, Status


@dataclass
class ScheduledSpan:
    seq: Sequence
    num_tokens: int  # confirmed tokens to compute this step (excludes drafts)
    num_drafts: int = 0  # speculative drafts appended after them
    start: int = field(init=False)  # seq.num_computed_tokens when scheduled
    completes: bool = field(init=False)  # every confirmed token computed after it: a token gets sampled

    def __post_init__(self) -> None:
        self.start = self.seq.num_computed_tokens
        self.completes = self.start + self.num_tokens == self.seq.num_tokens

    @property
    def token_ids(self) -> list[int]:
        s = self.seq
        return s.token_ids[self.start:self.start + self.num_tokens] + s.draft_token_ids[: self.num_drafts]


@dataclass
class SchedulerOutput:
    spans: list[ScheduledSpan] = field(default_factory=list)
    preempted: list[Sequence] = field(default_factory=list)


class Scheduler:
    def __init__(self, config: EngineConfig, blocks: BlockManager):
        self.config = config
        self.blocks = blocks
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self.num_preemptions = 0

    def add(self, seq: Sequence) -> None:
        self.waiting.append(seq)

    def has_unfinished(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> SchedulerOutput:
        out = SchedulerOutput()
        budget = self.config.max_num_batched_tokens
        scheduled: set[int] = set()

        # 1. running sequences, oldest first; preempt the newest when blocks run out
        i = 0
        while i < len(self.running) and budget > 0:
            seq = self.running[i]
            todo = seq.num_tokens - seq.num_computed_tokens
            n = min(todo, budget)
            drafts = len(seq.draft_token_ids) if n == todo else 0
            drafts = min(drafts, budget - n)
            while not self.blocks.can_allocate(seq, n + drafts) and drafts:
                drafts -= 1  # speculation is optional; shrink it before preempting anyone
            while not self.blocks.can_allocate(seq, n + drafts):
                victim = self.running[-1]
                self._preempt(victim)
                out.preempted.append(victim)
                if victim is seq:
                    break
            if seq.status is not Status.RUNNING:
                break  # seq preempted itself: it was the newest; nothing after it runs
            self.blocks.allocate(seq, n + drafts)
            out.spans.append(ScheduledSpan(seq, n, drafts))
            scheduled.add(id(seq))
            budget -= n + drafts
            i += 1

        # 2. admit waiting sequences (not in a step that had to preempt: the pool is tight), and rank
        #    them only when one can be admitted: ranking hashes every waiting prompt
        if not out.preempted and budget > 0 and len(self.running) < self.config.max_num_seqs:
            self._order_waiting()
            while self.waiting and budget > 0 and len(self.running) < self.config.max_num_seqs:
                seq = self.waiting[0]
                cached = self.blocks.match_prefix(seq)
                n = min(seq.num_tokens - seq.num_computed_tokens, budget)
                if not self.blocks.can_allocate(seq, n):
                    self.blocks.free_blocks(seq)  # give the matched prefix back; try again next step
                    break
                self.waiting.popleft()
                if not seq.admitted_once:
                    seq.admitted_once = True
                    seq.metrics.cached_tokens = cached
                    seq.metrics.cached_tokens_disk = min(cached, seq.disk_cached_tokens)
                    self.blocks.record_query(seq.num_prompt_tokens, cached)
                    seq.first_scheduled_time = time.perf_counter()
                self.blocks.allocate(seq, n)
                seq.status = Status.RUNNING
                self.running.append(seq)
                out.spans.append(ScheduledSpan(seq, n, 0))
                budget -= n
        return out

    def _order_waiting(self) -> None:
        if self.config.scheduling_policy == "cache_aware" and len(self.waiting) > 1:
            # longest cached prefix first; stable, so ties stay FCFS
            ranked = sorted(self.waiting, key=lambda s: -self._cached_prefix_blocks(s))
            self.waiting = deque(ranked)

    def _cached_prefix_blocks(self, seq: Sequence) -> int:
        if seq.block_table or not self.blocks.enable_caching:
            return 0
        n = self.blocks.match_prefix(seq)
        self.blocks.free_blocks(seq)
        return n

    def _preempt(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.blocks.cache_full_blocks(seq)
        self.blocks.free_blocks(seq)
        seq.draft_token_ids = []
        seq.status = Status.WAITING
        self.waiting.appendleft(seq)
        self.num_preemptions += 1

    def remove(self, seq: Sequence) -> None:
        """Take a finished or aborted sequence out and free its blocks (full ones stay cached)."""
        if seq in self.running:
            self.running.remove(seq)
        elif seq in self.waiting:
            self.waiting.remove(seq)
        if seq.block_table:
            self.blocks.cache_full_blocks(seq)
            self.blocks.free_blocks(seq)
        seq.draft_token_ids = []
