"""The checks a reply meets before its edits are read (pipeline.REPLY_CHECKS), in order: a reply repeating
an earlier one, a reply its watch stopped as it streamed (early_stop.py), a reply cut off inside a code
block (cut_replies.py: nothing of it is applied, or only its complete definitions), a reply that copies the
instructions' example (edit_checks.copied_placeholders). Each takes the draft and the context; it refines
the draft or raises ReplyRejected."""

from __future__ import annotations

from deltaserve.errors import ReplyRejected
from deltaserve.harness import feedback
from deltaserve.harness.cut_replies import cut_reply
from deltaserve.harness.early_stop import EARLY_STOP, file_reader, watch_for
from deltaserve.harness.edit_checks import copied_placeholders
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.trial import Context, Draft

CUT_ERROR = "reply cut off inside a code block"


def repeated_reply(draft: Draft, ctx: Context) -> None:
    """A reply the model sent before, verbatim: nothing new to try."""
    key = draft.original.strip()
    if key in ctx.replies:
        raise ReplyRejected(Outcome.REPEATED_REPLY, feedback.repeated_reply(ctx.replies.index(key) + 1))


def stopped_early(draft: Draft, ctx: Context) -> None:
    """A reply its watch cut as it streamed: the block it was writing could not apply, and the model hears
    the line that is not there."""
    if draft.finish_reason != EARLY_STOP:
        return
    watch = watch_for(getattr(draft.reader, "name", ""), file_reader(ctx.workspace))
    why = (watch(draft.text) if watch else None) or "the reply was stopped early"
    raise ReplyRejected(Outcome.STOPPED_EARLY, why, why)


def cut_inside_a_block(draft: Draft, ctx: Context) -> None:
    """A whole file cut short would be written short: only the definitions the model finished are kept,
    where the format reads definitions, else nothing."""
    cut = cut_reply(draft.text, draft.finish_reason, draft.reader, ctx.workspace)
    if cut is None:
        return
    if cut.text is None:
        raise ReplyRejected(Outcome.CUT_OFF, feedback.cut_off(ctx.config.max_tokens), CUT_ERROR)
    draft.text, draft.reader, draft.cut = cut.text, cut.reader, cut


def copied_example(draft: Draft, ctx: Context) -> None:
    """A placeholder line of a format's example (`<the new line>`): the example, not an edit."""
    copied = copied_placeholders(draft.text)
    if copied:
        told = feedback.placeholders_copied(copied)
        raise ReplyRejected(Outcome.EXAMPLE_COPIED, told, told)
