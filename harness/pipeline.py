"""One reply -> tested edits, for the agent's own reply and for every candidate alike.

    evaluate(reply, finish_reason, reader, context, target) -> Trial

runs the stages in order: the reply checks (reply_checks.py), reading the edits (a reply without any is
answered: its lookups, or what an edit looks like), the edit repairs (edit_repairs.py), the preview (the
edits applied to nothing), the preview checks (edit_checks.CHECKS), the write (targets.py: the workspace
or a scratch copy) and the tests. A stage takes the draft and the context; it refines the draft or raises
ReplyRejected, which carries the outcome and what the model is told. Adding a check is adding it to one
of the lists below. What the model reads about how its edits were read (a cut reply's complete part, a
path repaired, a stale block re-read) comes first in whatever it is told about those edits.
"""

from __future__ import annotations

from dataclasses import replace

from deltaserve.errors import NoChangesError, ReplyRejected, ToolError
from deltaserve.harness import edit_checks, edit_repairs, feedback, lookups, reply_checks
from deltaserve.harness.fault_hints import quoted_tests
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.regressions import regressed
from deltaserve.harness.trial import Context, Draft, Trial
from deltaserve.harness.tried_code import code_state

REPLY_CHECKS = (reply_checks.repeated_reply, reply_checks.stopped_early, reply_checks.cut_inside_a_block,
                reply_checks.copied_example)
EDIT_REPAIRS = (edit_repairs.missing_paths, edit_repairs.stale_blocks, edit_repairs.misnamed_files)
PREVIEW_CHECKS = edit_checks.CHECKS


def evaluate(reply: str, finish_reason: str | None, reader, ctx: Context, target) -> Trial:
    """What `reply` (read with `reader`, the step's format) does in `ctx`, written to `target`."""
    draft = Draft(reply, finish_reason, reader)
    try:
        for check in REPLY_CHECKS:
            check(draft, ctx)
        read_edits(draft, ctx)
    except ReplyRejected as rejected:
        return Trial(Outcome(rejected.outcome), rejected.message, rejected.error)
    if not draft.edits:
        return answer(draft, ctx)
    for repair in EDIT_REPAIRS:
        repair(draft, ctx)
    notes = draft.notes(ctx.config.max_tokens)
    try:
        trial = write_and_test(draft, ctx, target)
    except ReplyRejected as rejected:
        trial = Trial(Outcome(rejected.outcome), rejected.message, rejected.error)
    return replace(trial, feedback="\n\n".join([*notes, trial.feedback])) if notes else trial


def read_edits(draft: Draft, ctx: Context) -> None:
    try:
        draft.edits = draft.reader.parse(draft.text)
    except ValueError as exc:  # a malformed block: the model is told what is wrong with it
        raise ReplyRejected(Outcome.PARSE_FAILED, feedback.unreadable_edits(exc), str(exc)) from exc


def answer(draft: Draft, ctx: Context) -> Trial:
    """A reply without edits: its VIEW/GREP requests answered, or what it lacked said."""
    wanted = lookups.parse(draft.original)
    if not wanted:
        return Trial(Outcome.NO_EDITS, feedback.no_edits(ctx.asked.instructions()))
    viewed = tuple(w.target for w in wanted if w.kind == "view" and w.start is None)
    answers = [lookups.serve(w, ctx.workspace, ctx.numbered_context) for w in wanted]
    return Trial(Outcome.LOOKED_UP, feedback.lookup_answers(answers), viewed=viewed)


def write_and_test(draft: Draft, ctx: Context, target) -> Trial:
    try:
        preview(draft, ctx)
        for check in PREVIEW_CHECKS:
            check(draft, ctx)
        result = target.write(draft.reader, draft.edits, draft.preview)
    except NoChangesError as exc:  # the tools found nothing to change: a no-op edit, as a check finds it
        paths = list(exc.paths or draft.edited_paths())
        said = f"{feedback.no_op_edits(paths or ['the files'])}\n{exc.message}"
        told = edit_checks.no_op_feedback(said, paths, ctx)
        raise ReplyRejected(Outcome.NO_OP_EDIT, told, exc.message) from exc
    except ToolError as exc:
        quoted = quoted_tests(draft.edits, ctx.workspace, list(ctx.in_play))
        raise ReplyRejected(Outcome.APPLY_FAILED, feedback.unapplied_edits(exc.message, quoted),
                            exc.message) from exc
    changed = feedback.applied_edits(result.files_changed, result.diff, dry_run=ctx.config.dry_run)
    if ctx.config.dry_run:
        return Trial(Outcome.DRY_RUN, changed, result=result)
    return tested(result, changed, draft, ctx, target)


def preview(draft: Draft, ctx: Context) -> None:
    """The edits applied to nothing (raises before anything is written), the files as they are now, and
    the code the edits would give."""
    draft.preview = draft.reader.apply(draft.edits, ctx.workspace, dry_run=True)
    draft.old = {p: ctx.workspace.read_text(p) if ctx.workspace.exists(p) else None
                 for p in draft.preview.new_contents}
    draft.state = code_state(ctx.workspace, ctx.originals, draft.preview.new_contents)


def tested(result, changed: str, draft: Draft, ctx: Context, target) -> Trial:
    """The tests run on the written edits; edits after which the tests came out worse than before them are
    undone (unless keep_worse_edits)."""
    tests = target.test()
    outcome = Outcome.TESTS_PASS if tests.ok else Outcome.TESTS_FAIL
    told = f"{changed}\n\n{feedback.describe_tests(tests, ctx.test_cmd, ctx.config.output_tail_chars)}"
    before = ctx.baseline
    worse = not tests.ok and before is not None and regressed(tests, before)
    if worse and not ctx.config.keep_worse_edits:
        target.undo()
        return Trial(Outcome.TESTS_WORSE, f"{told}\n\n{feedback.worse_edits_undone(before, tests)}",
                     result=result, tests=tests, state=draft.state, undone=True)
    return Trial(outcome, told, result=result, tests=tests, state=draft.state)
