"""SamplingParams and the choice of the next token from one row of logits.

The math cannot overflow for any valid parameters: a temperature below MIN_TEMPERATURE is greedy (dividing
logits by it would reach inf and softmax would give NaN), scaling and filtering run in float32, and top-p
always keeps the most likely token (a top_p that rounds to 0 in float32 would otherwise drop every token).
"""

from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field

from deltaserve.engine.config import SpeculativeMethod

# Below this, sampling is argmax in all but name: the top logit outweighs the next by a factor of
# exp(gap / temperature), so we take the argmax rather than divide by a number that overflows float32.
MIN_TEMPERATURE = 1e-5


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

    @property
    def greedy(self) -> bool:
        return self.temperature < MIN_TEMPERATURE or self.top_k == 1


def make_generator(params: SamplingParams, device: torch.device) -> torch.Generator | None:
    if params.greedy:
        return None
    gen = torch.Generator(device=device)
    if params.seed is not None:
        gen.manual_seed(params.seed)
    else:
        gen.seed()
    return gen


def probabilities(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """Softmax of temperature-scaled logits [..., V] after top-k / top-p filtering (float32; a greedy
    temperature is scaled as MIN_TEMPERATURE, which puts nearly all the mass on the argmax)."""
    logits = logits.float() / max(params.temperature, MIN_TEMPERATURE)
    if params.top_k > 0 and params.top_k < logits.shape[-1]:
        kth = torch.topk(logits, params.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if params.top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        sorted_probs = sorted_logits.softmax(-1)
        drop = sorted_probs.cumsum(-1) - sorted_probs >= params.top_p  # keep the smallest set reaching top_p
        drop[..., 0] = False  # the most likely token always stays, however small top_p is
        sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
        logits = torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)
    return logits.softmax(-1)


def sample(logits: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    """Next token from one row of logits [V]."""
    if params.greedy:
        return int(logits.argmax())
    probs = probabilities(logits, params)
    return int(torch.multinomial(probs, 1, generator=generator))
