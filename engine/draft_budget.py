"""How many draft tokens are worth verifying: what a draft token costs on this machine, and how often a
request's drafts are accepted.

A draft token rides in the verify pass as one more row. Where a pass is memory-bound (a GPU, or a CPU
reading bf16/int4 weights) a row is nearly free; where it is compute-bound it is not: on a 2-core AVX2
EPYC with int8 weights each draft row of the 1.5B model cost 0.27-0.31 of a plain pass (measured here),
and a reply with little to copy decoded 1.2-1.3x *slower* with unbudgeted n-gram drafts than without.
`DraftCost` times the engine's own batch-1 decode passes and learns that share; `AcceptanceRate` follows
one request's drafts from one source. The j-th draft token is reached with probability rate^j and costs
`share` of a pass, so a draft stops at the last j with rate^j >= share (`worth`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RATE_WEIGHT = 0.3  # weight of the newest drafted pass in a running acceptance rate
# What a strong match drafts when the rate pays for nothing: a probe, so the rate can recover once the
# request starts copying again (a drafter that only drafted while it paid would never learn that).
PROBE_TOKENS = 2
COST_WEIGHT = 0.2  # weight of the newest timed pass in the running pass times
MIN_SHARE, MAX_SHARE = 0.001, 0.99
PRIOR_SHARE = 0.05  # until the engine has timed both kinds of pass (a memory-bound pass's row is cheap)


def worth(rate: float, share: float, cap: int) -> int:
    """Draft tokens worth verifying: the last j <= cap with rate^j >= share."""
    if rate >= 1.0:
        return cap
    if rate <= 0.0 or rate < share:
        return 0
    return min(cap, int(math.log(share) / math.log(rate)))


def running(mean: float | None, value: float) -> float:
    return value if mean is None else mean + COST_WEIGHT * (value - mean)


class DraftCost:
    """A draft token's cost as a share of a plain decode pass, from timed batch-1 passes (1 row: a plain
    pass; 1 + d rows: a verify pass of d drafts). PRIOR_SHARE until both were timed; `pinned` fixes it."""

    def __init__(self, pinned: float | None = None):
        self.pinned = pinned
        self.plain_s: float | None = None  # running time of a 1-row pass
        self.row_s: float | None = None  # running extra time of one more row

    @property
    def share(self) -> float:
        if self.pinned is not None:
            return self.pinned
        if self.plain_s is None or self.row_s is None:
            return PRIOR_SHARE
        return min(MAX_SHARE, max(MIN_SHARE, self.row_s / self.plain_s))

    def observe(self, rows: int, seconds: float) -> None:
        """One timed forward pass of a single decoding sequence with `rows` rows."""
        if rows == 1:
            self.plain_s = running(self.plain_s, seconds)
        elif self.plain_s is not None:
            self.row_s = running(self.row_s, max(0.0, seconds - self.plain_s) / (rows - 1))


@dataclass
class AcceptanceRate:
    """One request's running per-token acceptance rate of one source's drafts (the chance a draft token
    is accepted given the one before it was), folded from the request's counters before each proposal."""

    rate: float = 1.0
    proposed: int = 0  # the request's counters as last folded in
    accepted: int = 0

    def update(self, seq, source: str) -> float:
        c = seq.metrics.drafts.get(source)
        proposed, accepted = (c.proposed, c.accepted) if c is not None else (0, 0)
        if proposed > self.proposed:  # the last verified drafts: `taken` tokens, then one rejected unless all
            new, taken = proposed - self.proposed, accepted - self.accepted
            trials = taken + (taken < new)
            self.rate += RATE_WEIGHT * (taken / trials - self.rate)
        self.proposed, self.accepted = proposed, accepted
        return self.rate
