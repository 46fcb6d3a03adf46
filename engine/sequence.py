"""One request's state inside the engine: tokens, KV blocks, progress, text and timings."""

from __future__ import annotations

import enum
import time

from deltaserve.engine.constraints.base import TokenConstraint
from deltaserve.engine.outputs import RequestMetrics, RequestOutput, TokenLogprob
from deltaserve.engine.sampler import SamplingParams


class Status(enum.Enum):
    WAITING = "waiting"  # holds no KV blocks (new, or preempted for recompute)
    RUNNING = "running"  # holds blocks; prefilling (in chunks) or decoding
    FINISHED = "finished"


class Sequence:
    def __init__(self, request_id: str, prompt_token_ids: list[int], params: SamplingParams,
                 cache_salt: str | None, seed: int | None, constraint: TokenConstraint | None = None):
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.token_ids = list(prompt_token_ids)  # prompt + confirmed generated tokens
        self.num_prompt_tokens = len(prompt_token_ids)
        self.params = params
        self.cache_salt = cache_salt
        self.seed = seed  # what this request's sampled draws derive from (sampler.position_generator)
        self.constraint = constraint  # which tokens it may emit next (engine/constraints), or None
        self.status = Status.WAITING
        self.finish_reason: str | None = None
        self.stop_string: str | None = None  # the stop string that ended the output, where one did
        self.error: str | None = None

        # KV state: tokens [0, num_computed_tokens) have their K/V in the blocks of block_table.
        self.num_computed_tokens = 0
        self.block_table: list[int] = []
        self.block_hashes: list[bytes] = []  # hashes of the leading full blocks already indexed
        self.draft_token_ids: list[int] = []  # speculative drafts to verify in the next pass
        self.draft_source: str | None = None  # the drafter that proposed them
        self.admitted_once = False
        self.disk_cached_tokens = 0  # of the matched prefix, tokens loaded from the disk tier

        # text: incremental detokenization (prefix/read offsets into the generated ids)
        self.text = ""
        self.emitted_chars = 0
        self.prefix_offset = 0
        self.read_offset = 0
        self.new_token_ids: list[int] = []
        # per generated token, its logprobs (when the request asked for them), and this step's
        self.logprobs: list[TokenLogprob] | None = [] if params.logprobs is not None else None
        self.new_logprobs: list[TokenLogprob] = []

        self.metrics = RequestMetrics(prompt_tokens=len(prompt_token_ids))
        self.arrival_time = time.perf_counter()
        self.first_scheduled_time: float | None = None
        self.first_token_time: float | None = None
        self.last_token_time: float | None = None
        self.finish_time: float | None = None

    @property
    def output_token_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    @property
    def num_output_tokens(self) -> int:
        return len(self.token_ids) - self.num_prompt_tokens

    @property
    def num_tokens(self) -> int:
        return len(self.token_ids)

    @property
    def finished(self) -> bool:
        return self.status is Status.FINISHED

    @property
    def in_prefill(self) -> bool:
        return self.first_token_time is None

    def append_token(self, token: int, logprob: TokenLogprob | None = None) -> None:
        self.token_ids.append(token)
        self.new_token_ids.append(token)
        if self.logprobs is not None:
            self.logprobs.append(logprob)
            self.new_logprobs.append(logprob)

    def finish(self, reason: str, error: str | None = None, stop_string: str | None = None) -> None:
        self.status = Status.FINISHED
        self.finish_reason = reason
        self.error = error
        self.stop_string = stop_string
        self.finish_time = time.perf_counter()

    def make_output(self, held_back: int = 0) -> RequestOutput:
        """Output for this step; `held_back` chars at the end of text may still become a stop string."""
        upto = len(self.text) if self.finished else max(self.emitted_chars, len(self.text) - held_back)
        new_text = self.text[self.emitted_chars:upto]
        self.emitted_chars = upto
        m = self.metrics
        m.completion_tokens = self.num_output_tokens
        now = self.finish_time or time.perf_counter()
        if self.first_token_time is not None:
            m.decode_s = now - self.first_token_time
        # built once per request per step from values we own: construct without validation (a 2,000-token
        # prompt re-validated every token cost more than the rest of the output)
        out = RequestOutput.model_construct(
            request_id=self.request_id,
            prompt_token_ids=self.prompt_token_ids,
            token_ids=self.output_token_ids,
            new_token_ids=self.new_token_ids,
            text=self.text if self.finished else self.text[:upto],
            new_text=new_text,
            finished=self.finished,
            finish_reason=self.finish_reason,
            stop_string=self.stop_string,
            error=self.error,
            metrics=m.model_copy(update={"itl_s": list(m.itl_s)}),
            logprobs=None if self.logprobs is None else list(self.logprobs),
            new_logprobs=None if self.logprobs is None else self.new_logprobs,
        )
        self.new_token_ids = []
        self.new_logprobs = []
        return out
