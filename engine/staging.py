"""Host-side inputs to the device in one copy: many small index lists become one pinned host tensor, copied
without blocking the host, and come back as views. On CPU the tensor is used as is."""

from __future__ import annotations

import itertools

import torch


def to_device(device: torch.device, dtype: torch.dtype, *lists: list) -> list[torch.Tensor]:
    """One tensor per list, on `device`, from a single host-to-device copy."""
    flat = torch.tensor(list(itertools.chain.from_iterable(lists)), dtype=dtype)
    if device.type == "cuda":
        flat = flat.pin_memory().to(device, non_blocking=True)
    elif device.type != "cpu":
        flat = flat.to(device)
    return list(flat.split([len(x) for x in lists]))
