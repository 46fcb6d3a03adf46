"""A checkpoint's tensors as a mapping whose values are read from disk when taken.

Model conversion pops one tensor at a time (engine/convert.py), so with each read into fresh memory
(tensor_file.TensorFile.read) and dropped once converted, loading never holds the checkpoint whole, nor keeps
its file pages mapped. `identity` names the checkpoint for the converted weights' cache.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from pathlib import Path

import torch
from safetensors.torch import load_file

from deltaserve.engine.tensor_file import TensorFile, TensorFileError


class CheckpointWeights(MutableMapping):
    def __init__(self, files: list[Path], identity: str | None = None, label: str = "model"):
        self.files, self.identity, self.label = list(files), identity, label
        self._where: dict[str, TensorFile | dict] = {}
        self.nbytes = 0
        for f in self.files:
            source = _open(f)
            for name in source.keys():
                self._where[name] = source
            self.nbytes += f.stat().st_size

    def __getitem__(self, name: str) -> torch.Tensor:
        source = self._where[name]
        return source.read(name) if isinstance(source, TensorFile) else source[name]

    def __setitem__(self, name: str, value: torch.Tensor) -> None:
        self._where[name] = {name: value}

    def __delitem__(self, name: str) -> None:
        del self._where[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._where))

    def __len__(self) -> int:
        return len(self._where)

    def reopen(self) -> CheckpointWeights:
        """Every tensor again (after a conversion that consumed some failed)."""
        return CheckpointWeights(self.files, self.identity, self.label)


def _open(f: Path) -> TensorFile | dict:
    """A safetensors file read tensor by tensor; a .bin (or a safetensors file our reader refuses) whole."""
    if f.suffix == ".safetensors":
        try:
            return TensorFile(f)
        except TensorFileError:
            return load_file(f)
    return torch.load(f, map_location="cpu", weights_only=True)
