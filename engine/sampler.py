"""SamplingParams and the choice of the next token from one row of logits.

The math cannot overflow for any valid parameters: a temperature below MIN_TEMPERATURE is greedy (dividing
logits by it would reach inf and softmax would give NaN), scaling and filtering run in float32, and top-p
always keeps the most likely token (a top_p that rounds to 0 in float32 would otherwise drop every token).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

import torch
from pydantic import BaseModel, ConfigDict, Field

from deltaserve.engine.config import SpeculativeMethod
from deltaserve.engine.constraints.masks import unpack_bitmask
from deltaserve.engine.constraints.spec import GrammarSpec
from deltaserve.engine.logprobs import LogprobRows
from deltaserve.engine.outputs import TokenLogprob

# Below this, sampling is argmax in all but name: the top logit outweighs the next by a factor of
# exp(gap / temperature), so we take the argmax rather than divide by a number that overflows float32.
MIN_TEMPERATURE = 1e-5
MAX_TOP_LOGPROBS = 20  # OpenAI's top_logprobs limit


class SamplingParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_tokens: int = Field(default=256, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)  # < MIN_TEMPERATURE = greedy
    top_k: int = Field(default=0, ge=0)  # 0 = off
    top_p: float = Field(default=1.0, gt=0.0, le=1.0, allow_inf_nan=False)
    seed: int | None = None
    stop: list[str] = Field(default_factory=list)
    ignore_eos: bool = False
    prediction: str | None = None  # Predicted Outputs: a draft source for speculative decoding
    # This request's draft method; None: the engine's. An engine with speculation off drafts for nobody.
    speculative: SpeculativeMethod | None = None
    # Teacher forcing (decode-cost evals): these tokens are emitted in order instead of sampling, each
    # through a normal decode pass; the request finishes ("stop") when they run out.
    forced_token_ids: list[int] | None = None
    # Constrained decoding: the output matches this grammar (JSON schema, regex, Lark) from its first token.
    grammar: GrammarSpec | None = None
    # OpenAI's penalties: logits[t] -= presence * (count[t] > 0) + frequency * count[t], counts over this
    # request's generated tokens; before temperature, greedy rows too
    presence_penalty: float = Field(default=0.0, ge=-2.0, le=2.0, allow_inf_nan=False)
    frequency_penalty: float = Field(default=0.0, ge=-2.0, le=2.0, allow_inf_nan=False)
    # Per output token, its logprob and this many of the most likely ones' (the model's own log-softmax,
    # before penalties and temperature; after a grammar's mask); None: no logprobs
    logprobs: int | None = Field(default=None, ge=0, le=MAX_TOP_LOGPROBS)

    @property
    def greedy(self) -> bool:
        return self.temperature < MIN_TEMPERATURE or self.top_k == 1

    @property
    def penalized(self) -> bool:
        return bool(self.presence_penalty or self.frequency_penalty)


def request_seed(params: SamplingParams) -> int | None:
    """The seed a sampling request's draws derive from (its own, or a random one); None when greedy."""
    if params.greedy:
        return None
    return params.seed if params.seed is not None else random.getrandbits(63)


def position_generator(seed: int, position: int, device: torch.device) -> torch.Generator:
    """The generator of one output position's draw. Keyed by (seed, position), never by how many draws came
    before: a seeded request gives the same tokens with or without speculation (a verify pass draws for rows
    it then rejects) and whatever it is batched with."""
    gen = torch.Generator(device=device)
    gen.manual_seed(hash((seed, position)) & (2**63 - 1))
    return gen


class SamplingBatch:
    """The sampling parameters of one step's logits rows as per-row device tensors, so that every row is
    sampled in one batched pass with no host round trip (greedy rows take the argmax, the others are drawn
    with their own generator). Filters a step does not use are left out (None) and cost nothing.
    `masks` [R, ceil(V / 32)] int32 on the host: the rows' allowed tokens as bits (constrained decoding;
    engine/constraints), copied to the device with the rest; None when no row is constrained.
    `counted`: per row, the tokens its penalties count (its request's generated tokens, then in a verify
    pass the drafts before the row); read only for penalised rows, and may be None when there are none."""

    def __init__(self, params: list[SamplingParams], generators: list[torch.Generator | None],
                 device: torch.device, masks: torch.Tensor | None = None,
                 counted: list[Sequence[int]] | None = None):
        self.allowed_words = None if masks is None else _to_device(masks, device)
        self.penalties = Penalties.of(params, counted, device)
        self.logprobs = LogprobRows.of([p.logprobs for p in params], device)
        self.greedy_rows = [p.greedy for p in params]
        self.all_greedy = all(self.greedy_rows)
        self.generators = [None if g else gen for g, gen in zip(self.greedy_rows, generators, strict=True)]
        self.temperature = self.top_k = self.top_p = self.greedy = None
        self.max_top_k = 0
        if self.all_greedy:
            return
        # greedy rows sample at temperature 1 (their draw is discarded): no extreme scaling anywhere
        temps = [1.0 if g else max(p.temperature, MIN_TEMPERATURE) for g, p in zip(self.greedy_rows, params,
                                                                                  strict=True)]
        top_k = [min(p.top_k, 2**62) for p in params]  # any top_k beyond the vocabulary filters nothing
        top_p = [p.top_p for p in params]
        # float32 columns: temperature, top_p, greedy flag; top_k in its own long tensor when used
        floats = torch.tensor([temps, top_p, [float(g) for g in self.greedy_rows]], dtype=torch.float32)
        floats = _to_device(floats, device)
        self.temperature = floats[0]
        self.top_p = floats[1] if any(p < 1.0 for p in top_p) else None
        self.greedy = floats[2].bool()
        if any(top_k):
            self.max_top_k = max(top_k)
            self.top_k = _to_device(torch.tensor(top_k, dtype=torch.long), device)

    def unpack(self, host: list) -> Sampled:
        """The step's tokens (and logprobs) from what sample_rows brought back to the host."""
        if self.logprobs is None:
            return Sampled(host, None)
        return Sampled(*self.logprobs.unpack(host))


class Sampled(NamedTuple):
    """One step's sampled rows: a token each, and each row's logprobs (None: no row asked for any; an entry
    is None for a row that did not)."""

    tokens: list[int]
    logprobs: list[TokenLogprob | None] | None


class Penalties:
    """The presence / frequency penalties of a batch's penalised rows and the tokens each counts, on the
    device; applied to logits [R, V] with no host round trip (the counts are scattered there)."""

    def __init__(self, rows: torch.Tensor, presence: torch.Tensor, frequency: torch.Tensor,
                 counted: torch.Tensor):
        self.rows = rows  # [P] the penalised rows
        self.presence, self.frequency = presence, frequency  # [P] float32
        self.counted = counted  # [2, N] long: (index into rows, token) per counted token

    @classmethod
    def of(cls, params: list[SamplingParams], counted: list[Sequence[int]] | None,
           device: torch.device) -> Penalties | None:
        """The batch's penalties; None when no row is penalised or none has a token to count yet."""
        rows = [r for r, p in enumerate(params) if p.penalized]
        if not rows or counted is None or not any(counted[r] for r in rows):
            return None
        which: list[int] = []
        tokens: list[int] = []
        for i, r in enumerate(rows):
            which += [i] * len(counted[r])
            tokens += counted[r]
        floats = torch.tensor([[params[r].presence_penalty for r in rows],
                               [params[r].frequency_penalty for r in rows]], dtype=torch.float32)
        longs = torch.tensor([which, tokens], dtype=torch.long)
        floats, longs, index = (_to_device(t, device) for t in (floats, longs, torch.tensor(rows)))
        return cls(index, floats[0], floats[1], longs)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """logits [R, V] with each penalised row's penalties subtracted (float32; a new tensor)."""
        vocab = logits.shape[-1]
        counts = torch.zeros(len(self.rows) * vocab, dtype=torch.float32, device=logits.device)
        flat = self.counted[0] * vocab + self.counted[1]
        counts = counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.float32)).view(-1, vocab)
        penalty = self.presence[:, None] * (counts > 0) + self.frequency[:, None] * counts  # [P, V]
        return logits.float().index_add(0, self.rows, penalty, alpha=-1)


def _to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A small host tensor on the device, copied from pinned memory without blocking the host."""
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def batch_probabilities(logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor | None,
                        max_top_k: int, top_p: torch.Tensor | None) -> torch.Tensor:
    """Softmax [R, V] of each row's temperature-scaled logits after its top-k / top-p filtering (float32).
    temperature [R]; top_k [R] (0 = off) or None; top_p [R] or None; max_top_k: the largest top_k."""
    logits = logits.float() / temperature[:, None]
    vocab = logits.shape[-1]
    if top_p is None and top_k is not None and max_top_k < vocab:
        top = torch.topk(logits, max_top_k, dim=-1).values  # [R, max k], descending
        kth = top.gather(-1, (torch.where(top_k > 0, top_k, max_top_k) - 1)[:, None])
        logits = logits.masked_fill(logits < kth, float("-inf"))
    elif top_p is not None:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        if top_k is not None:
            k = torch.where(top_k > 0, top_k, vocab).clamp_(max=vocab)
            kth = sorted_logits.gather(-1, (k - 1)[:, None])
            sorted_logits = sorted_logits.masked_fill(sorted_logits < kth, float("-inf"))
        sorted_probs = sorted_logits.softmax(-1)
        # keep the smallest set reaching top_p; the most likely token always stays, however small top_p is
        drop = sorted_probs.cumsum(-1) - sorted_probs >= top_p[:, None]
        drop[..., 0] = False
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return logits.softmax(-1)


def sample_rows(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    """What a step brings back to the host, in its one copy: the tokens [R] long, or, when a row wants
    logprobs, the tokens packed with them ([R, 2 + 2K] float32, engine/logprobs.py). Logprobs are of the
    model's own distribution (after a grammar's mask; before penalties and temperature, as vLLM's)."""
    logits = _masked(logits, batch)
    tokens = _draw(logits, batch)
    return tokens if batch.logprobs is None else batch.logprobs.pack(logits, tokens)


def sample_batch(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    """The next token of every row of logits [R, V], on the device: [R] long.

    A sampled row draws by the exponential race (argmax of p / E with E ~ Exp(1), which picks token i with
    probability p_i), its noise from the row's own generator: a seed gives the same tokens whatever else is
    in the batch, and nothing waits for the host. Tokens a row's mask disallows are never picked; penalties
    come before temperature and filters, and apply to greedy rows too."""
    return _draw(_masked(logits, batch), batch)


def _masked(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    """logits [R, V] with every token a row's mask disallows at -inf."""
    if batch.allowed_words is None:
        return logits
    allowed = unpack_bitmask(batch.allowed_words, logits.shape[-1])
    return logits.masked_fill(~allowed, float("-inf"))


def _draw(logits: torch.Tensor, batch: SamplingBatch) -> torch.Tensor:
    """The token [R] of every row of masked logits: penalties, then the argmax or the row's draw."""
    if batch.penalties is not None:  # after the mask: a disallowed token stays at -inf
        logits = batch.penalties.apply(logits)
    greedy_tokens = logits.argmax(-1)
    if batch.all_greedy:
        return greedy_tokens
    probs = batch_probabilities(logits, batch.temperature, batch.top_k, batch.max_top_k, batch.top_p)
    noise = torch.ones_like(probs)
    for row, gen in enumerate(batch.generators):
        if gen is not None:
            noise[row].exponential_(generator=gen)
    sampled = probs.div_(noise.clamp_(min=torch.finfo(torch.float32).tiny)).argmax(-1)
    return torch.where(batch.greedy, greedy_tokens, sampled)


def probabilities(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Softmax of one row [V] of temperature-scaled logits after top-k / top-p filtering (float32; a greedy
    temperature is scaled as MIN_TEMPERATURE, which puts nearly all the mass on the argmax)."""
    row = lambda value, dtype: torch.tensor([value], dtype=dtype, device=logits.device)  # noqa: E731
    top_k = row(min(params.top_k, 2**62), torch.long) if params.top_k else None
    top_p = row(params.top_p, torch.float32) if params.top_p < 1.0 else None
    temperature = row(max(params.temperature, MIN_TEMPERATURE), torch.float32)
    return batch_probabilities(logits[None], temperature, top_k, min(params.top_k, 2**62), top_p)[0]


def sample(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    """Next token from one row of logits [V] (the batched sampler on one row)."""
    return int(sample_batch(logits[None], SamplingBatch([params], [generator], logits.device))[0])
