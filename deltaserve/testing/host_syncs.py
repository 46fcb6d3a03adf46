"""Count what one piece of torch code asks of the device: every aten op it dispatches, and the ones that make
the host wait for the device (a value read back: .item(), .tolist(), a bool mask's nonzero, ...).

On CPU nothing waits, so the count is of ops that *would* synchronise on CUDA: a check of the CUDA path that
runs in CI. torch.cuda.set_sync_debug_mode("warn") is the same check on a real GPU (scripts/gpu_check.sh).
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

aten = torch.ops.aten
# ops whose result's size or value has to reach the host before they (or their caller) can go on
SYNC_OPS = {
    aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default, aten.equal.default,
    aten.is_nonzero.default, aten.unique_consecutive.default, aten._unique2.default, aten.unique_dim.default,
    aten.repeat_interleave.Tensor, aten.item.default,
}


_active: list[HostSyncCounter] = []


def _current_counter() -> HostSyncCounter | None:
    return _active[-1] if _active else None


# ops that only make a new view of memory: no kernel launch
VIEW_OPS = {"view", "slice", "select", "transpose", "unsqueeze", "reshape", "chunk", "split",
            "split_with_sizes", "permute", "expand", "narrow", "squeeze", "t", "as_strided", "alias",
            "detach", "detach_", "lift_fresh", "resolve_conj", "resolve_neg", "_unsafe_view"}


def _bool_index(args) -> bool:
    """aten.index / index_put_ with a boolean index: a nonzero inside, to size the result."""
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices or ())


class HostSyncCounter(TorchDispatchMode):
    """with HostSyncCounter() as c: ...  -> c.ops (Counter of op names), c.syncs (list of op names)."""

    def __init__(self):
        super().__init__()
        self.ops: Counter[str] = Counter()
        self.syncs: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = str(func.overloadpacket.__name__)
        self.ops[name] += 1
        if func in SYNC_OPS or (func.overloadpacket in (aten.index, aten.index_put_, aten.index_put)
                                and _bool_index(args)):
            self.syncs.append(name)
        return func(*args, **(kwargs or {}))

    def __enter__(self):
        _active.append(self)
        # .tolist() does not dispatch on CPU (it reads the memory directly); on CUDA it is a copy to the host
        self._tolist = torch.Tensor.tolist
        counter = self

        def tolist(t):
            counter.syncs.append("tolist")
            return counter._tolist(t)

        torch.Tensor.tolist = tolist
        return super().__enter__()

    def __exit__(self, *exc):
        _active.remove(self)
        torch.Tensor.tolist = self._tolist
        return super().__exit__(*exc)

    @staticmethod
    def opaque(kernel):
        """`kernel` run unobserved and counted as one op ("kernel"): for a compiled kernel such as flex
        attention, which is one launch on CUDA and refuses to be traced under a dispatch mode."""
        if getattr(kernel, "opaque", False):  # already counted as one
            return kernel

        def run(*args, **kwargs):
            mode = _current_counter()
            if mode is None:
                return kernel(*args, **kwargs)
            mode.ops["kernel"] += 1
            with _disable_current_modes():
                return kernel(*args, **kwargs)
        run.opaque = True
        return run

    @property
    def total_ops(self) -> int:
        return sum(self.ops.values())

    @property
    def launches(self) -> int:
        """Ops that run a kernel (views excluded)."""
        return sum(n for name, n in self.ops.items() if name not in VIEW_OPS)
