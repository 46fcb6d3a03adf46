"""What the engine hands back: RequestOutput per request per step, with RequestMetrics."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DraftCounts(BaseModel):
    """One drafter's speculative drafts: passes that verified a draft from it, and its draft tokens."""

    drafts: int = 0
    proposed: int = 0
    accepted: int = 0
    rejected: int = 0

    def add(self, proposed: int, accepted: int, drafts: int = 1) -> None:
        self.drafts += drafts
        self.proposed += proposed
        self.accepted += accepted
        self.rejected += proposed - accepted


def add_drafts(counts: dict[str, DraftCounts], source: str, proposed: int, accepted: int,
               drafts: int = 1) -> None:
    counts.setdefault(source, DraftCounts()).add(proposed, accepted, drafts)


class RequestMetrics(BaseModel):
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the prefix cache (memory or disk)
    cached_tokens_disk: int = 0  # of those, tokens read from the disk tier
    prefill_tokens_computed: int = 0
    completion_tokens: int = 0
    decode_passes: int = 0  # forward passes after the first token (< completion_tokens with speculation)
    # of those, the passes that verified no draft (one token each) and their seconds: what a plain decode
    # token costs here, the price of a counterfactual reply decoded without drafts
    plain_passes: int = 0
    plain_pass_s: float = 0.0
    accepted_draft_tokens: int = 0
    rejected_draft_tokens: int = 0
    drafts: dict[str, DraftCounts] = Field(default_factory=dict)  # by drafter: prediction, ngram, suffix
    ttft_s: float | None = None  # arrival -> first token
    itl_s: list[float] = Field(default_factory=list)  # gaps between successive token emissions
    prefill_s: float = 0.0  # first scheduled -> first token
    decode_s: float = 0.0  # first token -> finished (or now)


class TokenLogprob(BaseModel):
    """One output token's logprob under the model's own distribution (log-softmax of its logits, after a
    grammar's mask, before penalties and temperature), and the most likely tokens' (most likely first)."""

    token_id: int
    logprob: float  # -inf for a token the grammar disallows
    top: list[tuple[int, float]]  # (token id, logprob), as many as the request asked for


class RequestOutput(BaseModel):
    request_id: str
    prompt_token_ids: list[int]
    token_ids: list[int]  # everything generated so far
    new_token_ids: list[int]  # generated in this step (> 1 with speculation)
    text: str  # generated text so far; the stop string excluded once finished
    new_text: str  # delta since the previous output, for streaming
    finished: bool
    finish_reason: str | None = None  # "stop" | "length" | "abort" | "error"
    stop_string: str | None = None  # the stop string that ended it (finish_reason "stop"), where one did
    error: str | None = None
    metrics: RequestMetrics
    # when the request asked for logprobs (SamplingParams.logprobs): one per generated token so far, and
    # those of this step's new tokens (streaming)
    logprobs: list[TokenLogprob] | None = None
    new_logprobs: list[TokenLogprob] | None = None


class EngineStats(BaseModel):
    num_blocks: int
    blocks_free: int
    blocks_cached: int
    blocks_in_use: int
    num_running: int
    num_waiting: int
    prefix_cache_queries: int
    prefix_cache_hits: int
    evictions: int
    preemptions: int
    draft_tokens: int = 0
    accepted_draft_tokens: int = 0
    # disk tier (engine/kv_disk.py), all 0 without one; hits, misses, corrupt, skipped, evictions: blocks
    kv_disk_hits: int = 0
    kv_disk_misses: int = 0
    kv_disk_bytes_read: int = 0
    kv_disk_bytes_written: int = 0
    kv_disk_corrupt_blocks: int = 0
    kv_disk_skipped_writes: int = 0
    kv_disk_evictions: int = 0
    kv_disk_bytes: int = 0  # size of this model's block files on disk
    kv_disk_writable: int = 0  # 1 while writes go on; 0 after a write error (or without a tier)
    drafts: dict[str, DraftCounts] = Field(default_factory=dict)  # by drafter, since the engine started
