"""Each edit format's gold reply for a task: the text a perfect model would write in that format.

Built from the task's gold patch through the agent's own `harness.formats` code, then checked by round
trip: the reply, parsed and applied (dry run) by its format, must produce exactly the gold post-edit
files. A reply that fails the round trip is an error, never a silently wrong measurement.

- udiff: the gold diff as the udiff format asks for it (`--- a/` / `+++ b/` headers and hunks, no git
  `diff --git`/`index` lines) in a ```diff fence.
- search_replace: one block per changed region (difflib opcodes), its SEARCH grown by context lines
  until it is unique in the file, as the format's instructions ask ("short but unique").
- whole: the udiff format's `counterfactual` of the gold edits, i.e. exactly what the agent's
  accounting counts as the whole-file reply.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from harness import formats
from tools.patch import apply_patch

GIT_ONLY_PREFIXES = ("diff --git ", "index ", "similarity index", "old mode", "new mode")


class GoldReplyError(ValueError):
    """A gold reply could not be built or does not reproduce the gold patch."""


@dataclass(frozen=True)
class GoldEdit:
    """The gold patch as data: each edited file's content before and after."""

    before: dict[str, str]
    after: dict[str, str | None]

    @property
    def edited_file_lines(self) -> int:
        """Lines of the largest edited file (before the fix): the size the model has to work in."""
        return max((len(text.splitlines()) for text in self.before.values()), default=0)


def gold_edit(workspace, gold_diff: str) -> GoldEdit:
    result = apply_patch(workspace, gold_diff, dry_run=True)
    before = {p: workspace.read_text(p) for p in result.new_contents if workspace.exists(p)}
    return GoldEdit(before=before, after=dict(result.new_contents))


def udiff_reply(gold_diff: str) -> str:
    lines = [ln for ln in gold_diff.splitlines() if not ln.startswith(GIT_ONLY_PREFIXES)]
    body = "\n".join(lines).strip("\n")
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}diff\n{body}\n{fence}"


def _unique(lines: list[str], start: int, end: int) -> bool:
    """Whether lines[start:end] (non-empty) occurs exactly once in `lines`."""
    needle = lines[start:end]
    if not needle or not "".join(needle).strip():
        return False
    width = len(needle)
    return sum(1 for i in range(len(lines) - width + 1) if lines[i : i + width] == needle) == 1


def _regions(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """Changed regions (i1, i2, j1, j2), each widened by context until its old lines are unique in the file;
    regions whose widened old ranges touch are merged (a file's blocks must not overlap)."""
    regions: list[list[int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        grow_before = True
        while not _unique(old, i1, i2):
            can_before, can_after = i1 > 0, i2 < len(old)
            if not (can_before or can_after):
                break
            if (grow_before and can_before) or not can_after:
                i1, j1 = i1 - 1, j1 - 1
            else:
                i2, j2 = i2 + 1, j2 + 1
            grow_before = not grow_before
        if regions and i1 <= regions[-1][1]:
            regions[-1][1], regions[-1][3] = max(regions[-1][1], i2), max(regions[-1][3], j2)
        else:
            regions.append([i1, i2, j1, j2])
    return [tuple(r) for r in regions]


def search_replace_reply(edit: GoldEdit) -> str:
    blocks = []
    for path, after in edit.after.items():
        if after is None or path not in edit.before:
            raise GoldReplyError(f"{path}: search_replace cannot create or delete files")
        old, new = edit.before[path].splitlines(), after.splitlines()
        for i1, i2, j1, j2 in _regions(old, new):
            search, replace = "\n".join(old[i1:i2]), "\n".join(new[j1:j2])
            blocks.append(f"{path}\n```\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```")
    return "\n\n".join(blocks)


def _check_round_trip(name: str, reply: str, workspace, edit: GoldEdit) -> None:
    fmt = formats.get(name)
    edits = fmt.parse(reply)
    if not edits:
        raise GoldReplyError(f"the {name} gold reply parses to no edits")
    got = fmt.apply(edits, workspace, dry_run=True).new_contents
    want = {p: t for p, t in edit.after.items()}
    if dict(got) != want:
        bad = sorted(p for p in set(got) | set(want) if got.get(p) != want.get(p))
        raise GoldReplyError(f"the {name} gold reply does not reproduce the gold patch in {bad}")


def gold_replies(workspace, gold_diff: str, names: list[str] | None = None) -> tuple[GoldEdit, dict[str, str]]:
    """The gold edit and, per format name, its gold reply text (each verified by round trip)."""
    edit = gold_edit(workspace, gold_diff)
    udiff = udiff_reply(gold_diff)
    builders = {
        "udiff": lambda: udiff,
        "search_replace": lambda: search_replace_reply(edit),
        "whole": lambda: formats.get("udiff").counterfactual(formats.get("udiff").parse(udiff), workspace),
    }
    replies = {}
    for name in names or list(builders):
        if name not in builders:
            raise GoldReplyError(f"no gold reply builder for format {name!r}; known: {', '.join(builders)}")
        replies[name] = builders[name]()
        _check_round_trip(name, replies[name], workspace, edit)
    return edit, replies
