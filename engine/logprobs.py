"""Logprobs in the batched sampler: the rows that want them, packed on the device with the sampled tokens
into one float32 tensor, so the step still brings its results back in one device-to-host copy.

Packed row r, K = the most top logprobs any row asks for:
    [token id, its logprob, K top token ids, their K logprobs]
Token ids are exact in float32 below 2^24 (vocabularies are far smaller). Rows that want no logprobs carry
their token alone (the rest is left as zeros and never read).
"""

from __future__ import annotations

import torch

from deltaserve.engine.outputs import TokenLogprob
from deltaserve.engine.staging import to_device

MAX_EXACT_TOKEN_ID = 2**24  # float32 holds every integer below this exactly


class LogprobRows:
    """Which rows of a batch want logprobs and how many top ones each."""

    def __init__(self, top: list[int | None], device: torch.device):
        self.top = top  # per row: how many top logprobs (None: no logprobs)
        self.max_top = max(k for k in top if k is not None)
        wanted = [r for r, k in enumerate(top) if k is not None]
        self.rows = None if len(wanted) == len(top) else to_device(device, torch.long, wanted)[0]

    @classmethod
    def of(cls, top: list[int | None], device: torch.device) -> LogprobRows | None:
        return cls(top, device) if any(k is not None for k in top) else None

    def pack(self, logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """[R, 2 + 2K] float32 from the logits [R, V] (as the model gave them, masked) and the tokens [R]."""
        if logits.shape[-1] > MAX_EXACT_TOKEN_ID:
            raise ValueError(f"a vocabulary of {logits.shape[-1]} tokens is too large to pack as float32")
        packed = torch.zeros(len(tokens), 2 + 2 * self.max_top, dtype=torch.float32, device=logits.device)
        packed[:, 0] = tokens
        if self.rows is not None:  # only the rows that want them: [W, V]
            logits, tokens = logits.index_select(0, self.rows), tokens.index_select(0, self.rows)
        logprobs = logits.float().log_softmax(-1)
        top = logprobs.topk(self.max_top, dim=-1)  # most likely first
        values = torch.cat([logprobs.gather(-1, tokens[:, None]), top.indices.float(), top.values], dim=-1)
        if self.rows is None:
            packed[:, 1:] = values
        else:
            packed[:, 1:].index_copy_(0, self.rows, values)
        return packed

    def unpack(self, host: list[list[float]]) -> tuple[list[int], list[TokenLogprob | None]]:
        """The tokens and each row's TokenLogprob (None for rows that want none) from the packed rows."""
        tokens, logprobs = [], []
        k_max = self.max_top
        for row, k in zip(host, self.top, strict=True):
            token = int(row[0])
            tokens.append(token)
            if k is None:
                logprobs.append(None)
                continue
            top = [(int(i), lp) for i, lp in zip(row[2:2 + k], row[2 + k_max:2 + k_max + k], strict=True)]
            logprobs.append(TokenLogprob.model_construct(token_id=token, logprob=row[1], top=top))
        return tokens, logprobs
