"""Each edit format's gold reply for a task: the text a perfect model would write in that format.

Built from the task's gold patch through the agent's own `harness.formats` code, then checked by round
trip: the reply, parsed and applied (dry run) by its format, must produce exactly the gold post-edit
files. A reply that fails the round trip is an error, never a silently wrong measurement.

- udiff: the gold diff as the udiff format asks for it (`--- a/` / `+++ b/` headers and hunks, no git
  `diff --git`/`index` lines) in a ```diff fence.
- search_replace: one block per changed region (difflib opcodes), its SEARCH grown by context lines
  until it is unique in the file as the earlier blocks leave it, as the format asks ("short but unique").
- whole: the udiff format's `counterfactual` of the gold edits, i.e. exactly what the agent's
  accounting counts as the whole-file reply.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from deltaserve.errors import GoldReplyError
from deltaserve.harness import formats
from deltaserve.tools.fences import fence_for
from deltaserve.tools.patch import apply_patch

GIT_ONLY_PREFIXES = ("diff --git ", "index ", "similarity index", "old mode", "new mode")



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
    fence = fence_for(body.split("\n"))
    return f"{fence}diff\n{body}\n{fence}"


def _unique(lines: list[str], start: int, end: int) -> bool:
    """Whether lines[start:end] (non-blank) occurs exactly once in `lines`, compared the way tools.patch
    matches SEARCH text (leading and trailing whitespace ignored), so the block can never be ambiguous."""
    needle = [ln.strip() for ln in lines[start:end]]
    if not "".join(needle):
        return False
    stripped = [ln.strip() for ln in lines]
    width = len(needle)
    return sum(1 for i in range(len(lines) - width + 1) if stripped[i : i + width] == needle) == 1


def _blocks(old: list[str], new: list[str]) -> list[tuple[list[str], list[str]]]:
    """(search, replace) line lists, one per changed region, in file order.

    tools.patch applies blocks one after another, so each SEARCH must be unique in the file as the earlier
    blocks left it: the regions are walked over that evolving text, each grown by context lines (alternately
    before and after) until it matches exactly one place."""
    current = list(old)
    delta = 0  # how far earlier replacements shifted old line numbers in `current`
    blocks = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        c1, c2 = i1 + delta, i2 + delta
        a, b, grow_before = c1, c2, True
        while not _unique(current, a, b) and (a > 0 or b < len(current)):
            if (grow_before and a > 0) or b >= len(current):
                a -= 1
            else:
                b += 1
            grow_before = not grow_before
        replace = current[a:c1] + new[j1:j2] + current[c2:b]
        blocks.append((current[a:b], replace))
        current[a:b] = replace
        delta += (j2 - j1) - (i2 - i1)
    return blocks


def search_replace_reply(edit: GoldEdit) -> str:
    blocks = []
    for path, after in edit.after.items():
        if after is None or path not in edit.before:
            raise GoldReplyError(f"{path}: search_replace cannot create or delete files")
        for search, replace in _blocks(edit.before[path].splitlines(), after.splitlines()):
            search_text, replace_text = "\n".join(search), "\n".join(replace)
            blocks.append(f"{path}\n```\n<<<<<<< SEARCH\n{search_text}\n=======\n{replace_text}\n"
                          ">>>>>>> REPLACE\n```")
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


def gold_replies(workspace, gold_diff: str,
                 names: list[str] | None = None) -> tuple[GoldEdit, dict[str, str]]:
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
