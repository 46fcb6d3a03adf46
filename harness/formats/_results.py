"""Combine several tools.patch.PatchResult objects into one (for formats that apply file by file)."""

from __future__ import annotations


def merge_results(results: list):
    from deltaserve.tools.patch import PatchResult

    files_changed: list[str] = []
    new_contents: dict[str, str | None] = {}
    hunks: list = []
    diffs: list[str] = []
    for result in results:
        files_changed += [f for f in result.files_changed if f not in files_changed]
        new_contents.update(result.new_contents)
        hunks += list(result.hunks)
        if result.diff:
            diffs.append(result.diff)
    return PatchResult(files_changed=files_changed, new_contents=new_contents, hunks=hunks, diff="".join(diffs))
