"""The repairs parsed edits get before they are previewed (pipeline.EDIT_REPAIRS), in order: an edit naming
a missing file re-aimed at the file in play it fits (path_repair.repair_paths), SEARCH text of a file's
original version re-read against the file as it now is (stale_edits.py), a SEARCH block naming the wrong
existing file moved to the one holding its text (path_repair.repair_misnamed). Each takes the draft and
the context and refines the draft's edits, noting what it changed for the model (Draft.notes)."""

from __future__ import annotations

from deltaserve.harness.path_repair import repair_misnamed, repair_paths
from deltaserve.harness.stale_edits import rebase_stale_blocks
from deltaserve.harness.trial import Context, Draft


def missing_paths(draft: Draft, ctx: Context) -> None:
    draft.edits, moved = repair_paths(draft.edits, ctx.workspace, ctx.code_in_play)
    draft.moved += moved


def stale_blocks(draft: Draft, ctx: Context) -> None:
    draft.edits, rebased = rebase_stale_blocks(draft.edits, ctx.workspace, ctx.originals)
    draft.rebased += rebased


def misnamed_files(draft: Draft, ctx: Context) -> None:
    draft.edits, moved = repair_misnamed(draft.edits, ctx.workspace, ctx.code_in_play)
    draft.moved += moved
