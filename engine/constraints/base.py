"""TokenConstraint: what the engine asks of a request's decoding constraint, whatever implements it."""

from __future__ import annotations

from typing import Protocol

import torch


class TokenConstraint(Protocol):
    """The state of one request's constraint after the tokens it has emitted so far."""

    def fill_mask(self, row: torch.Tensor) -> None:
        """Write the tokens allowed next into `row`, an int32 CPU tensor of ceil(vocab / 32) words, one bit
        per token (bit i of word w: token 32 * w + i)."""

    def accept(self, token: int) -> bool:
        """Advance past an emitted token; False when the token breaks the constraint (the state is then an
        error state and `error` says why)."""

    def rollback(self, num_tokens: int) -> None:
        """Undo the last `num_tokens` accepted tokens (drafts looked at for a verify pass)."""

    def valid_prefix(self, tokens: list[int]) -> int:
        """How many of `tokens`, in order, the constraint would accept now (state unchanged)."""

    def forced_tokens(self) -> list[int]:
        """Tokens the constraint alone determines from here (drafts worth verifying); may be empty."""

    @property
    def done(self) -> bool:
        """Nothing more may be emitted: the request is complete."""

    @property
    def closed_by_budget(self) -> bool:
        """The output was closed early because its token budget ran short (the request then finishes with
        "length": the model would have gone on)."""

    @property
    def error(self) -> str | None:
        """Why the constraint cannot be met, once it cannot."""
