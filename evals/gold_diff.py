"""What a gold patch touches, parsed once with unidiff: the files it edits and its added/removed lines and
hunks (the suite's shape statistics and the decode-cost eval's file sizes both read it from here)."""

from __future__ import annotations

from dataclasses import dataclass

from unidiff import PatchSet


@dataclass(frozen=True)
class GoldDiff:
    paths: tuple[str, ...]  # repository-relative paths of the files before the patch (a/ prefix dropped)
    added: int
    removed: int
    hunks: int

    @property
    def files(self) -> int:
        return len(self.paths)


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path


def touched_paths(diff: str) -> list[str]:
    """Every path a diff reads or writes (both sides of a rename; new and deleted files), in order."""
    paths: list[str] = []
    for f in PatchSet(diff):
        for side in (f.source_file, f.target_file):
            if side != "/dev/null" and _strip_prefix(side) not in paths:
                paths.append(_strip_prefix(side))
    return paths


def parse_gold_diff(diff: str) -> GoldDiff:
    patch = PatchSet(diff)
    return GoldDiff(
        paths=tuple(_strip_prefix(f.source_file) for f in patch),
        added=sum(f.added for f in patch),
        removed=sum(f.removed for f in patch),
        hunks=sum(len(f) for f in patch),
    )
