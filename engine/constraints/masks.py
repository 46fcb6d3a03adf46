"""Bitmask rows: filled on the host per wanted logits row, copied once per step, unpacked on the device.

A row is ceil(vocab / 32) int32 words (llguidance's layout: bit i of word w allows token 32 * w + i); an
unconstrained row is all ones (-1), so one batch mask serves constrained and free rows alike.
"""

from __future__ import annotations

import torch

from deltaserve.engine.constraints.base import TokenConstraint

ALL_ALLOWED = -1


def words_per_row(vocab_size: int) -> int:
    return (vocab_size + 31) // 32


def fill_span_masks(constraint: TokenConstraint, drafts: list[int], rows: torch.Tensor) -> None:
    """Fill `rows` [n, words], the masks of one span's wanted rows: row j is the position after drafts[:j]
    (a verify pass samples at every draft). Drafts must be a valid prefix (see valid_prefix); the
    constraint's state is left as it was."""
    consumed = 0
    try:
        for j in range(rows.shape[0]):
            constraint.fill_mask(rows[j])
            if j < len(drafts) and j + 1 < rows.shape[0]:
                if not constraint.accept(drafts[j]):
                    raise ValueError(f"draft token {drafts[j]} breaks the constraint: {constraint.error}")
                consumed += 1
    finally:
        if consumed:
            constraint.rollback(consumed)


def unpack_bitmask(words: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[R, words] int32 -> [R, vocab_size] bool, on the words' device (three elementwise ops, no host)."""
    shifts = torch.arange(32, dtype=torch.int32, device=words.device)
    bits = (words.unsqueeze(-1) >> shifts) & 1
    return bits.flatten(1)[:, :vocab_size].bool()
