"""How many draft tokens are worth verifying: what a pass of 1 + d rows costs on this machine, and how often
a request's drafts are accepted.

A draft token rides in the verify pass as one more row. Where a pass is memory-bound (a GPU, or a CPU
reading bf16/int4 weights) a row is nearly free; where it is compute-bound it is not, and a verify pass can
also cost a fixed amount more than a plain one whatever its width (other kernels: on a 2-core Xeon a verify
pass took ~2x a plain one; a `symbol` reply drafted with low acceptance took 137 ms a token, plain 117).
`DraftCost` times the engine's own batch-1 passes by their row count; `AcceptanceRate` follows one request's
drafts from one source. The j-th draft token is reached with probability rate^j, so d drafts yield
1 + rate + ... + rate^d tokens in a pass of 1 + d rows: `DraftCost.best_drafts` picks the d with the most
tokens per second, 0 (plain decode) when no d beats a plain pass.
"""

from __future__ import annotations

from dataclasses import dataclass

RATE_WEIGHT = 0.3  # weight of the newest drafted pass in a running acceptance rate
# What a strong match drafts when the rate pays for nothing: a probe, so the rate can recover once the
# request starts copying again (a drafter that only drafted while it paid would never learn that).
PROBE_TOKENS = 2
COST_WEIGHT = 0.2  # weight of the newest timed pass in the running pass times
MIN_SHARE = 0.001  # the least a row is taken to cost (timer noise can make it look free or negative)
PRIOR_SHARE = 0.05  # until the engine has timed both kinds of pass (a memory-bound pass's row is cheap)


def running(mean: float | None, value: float) -> float:
    return value if mean is None else mean + COST_WEIGHT * (value - mean)


def best_drafts(rate: float, pass_time, cap: int) -> int:
    """The d <= cap with the most expected tokens per unit of time, (1 + rate + ... + rate^d) over
    pass_time(1 + d); 0 when a plain pass (1 token in pass_time(1)) does as well."""
    best, best_rate = 0, 1.0 / pass_time(1)
    expected, reach = 1.0, 1.0
    for d in range(1, cap + 1):
        reach *= max(0.0, min(rate, 1.0))
        expected += reach
        if expected / pass_time(1 + d) > best_rate:
            best, best_rate = d, expected / pass_time(1 + d)
    return best


class DraftCost:
    """The time of a batch-1 pass by its row count (1: a plain pass; 1 + d: a verify pass of d drafts), in
    plain passes, from the engine's timed passes: each row count seen keeps its running time; others are
    read off the line through their nearest seen neighbours. Until a verify pass was timed, a draft row costs
    PRIOR_SHARE of a plain pass; `pinned` fixes that share (and no pass is timed)."""

    def __init__(self, pinned: float | None = None):
        self.pinned = pinned
        self.seconds: dict[int, float] = {}  # row count -> running time of such a pass

    def pass_time(self, rows: int) -> float:
        """A pass of `rows` rows, in plain passes (1.0 for one row)."""
        if self.pinned is not None or 1 not in self.seconds or len(self.seconds) < 2:
            share = PRIOR_SHARE if self.pinned is None else self.pinned
            return 1.0 + share * (rows - 1)
        plain = self.seconds[1]
        seen = sorted(self.seconds)
        if rows in self.seconds:
            return max(MIN_SHARE, self.seconds[rows] / plain)
        below = max(r for r in seen if r < rows)  # 1 is seen, and rows > 1 here
        above = min((r for r in seen if r > rows), default=None)
        if above is None:  # beyond the widest pass seen: the slope of the last two (MIN_SHARE a row at least)
            below, above = seen[-2], seen[-1]
        t0, t1 = self.seconds[below], self.seconds[above]
        slope = max(MIN_SHARE * plain, (t1 - t0) / (above - below))
        return (t0 + slope * (rows - below)) / plain

    def best_drafts(self, rate: float, cap: int) -> int:
        return best_drafts(rate, self.pass_time, cap)

    def observe(self, rows: int, seconds: float) -> None:
        """One timed forward pass of a single decoding sequence with `rows` rows."""
        if self.pinned is None:
            self.seconds[rows] = running(self.seconds.get(rows), seconds)


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
