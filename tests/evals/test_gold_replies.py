"""Every task's gold reply in every format round-trips through the agent's own format code."""

import shutil

import pytest

from deltaserve.evals.gold_replies import GoldEdit, gold_replies, search_replace_reply
from deltaserve.evals.task_suite import load_tasks
from deltaserve.evals.transcript import replay_transcript
from deltaserve.harness import formats
from deltaserve.tools.patch import PatchError
from deltaserve.tools.workspace import Workspace

TASKS = load_tasks()


@pytest.fixture
def copy(tmp_path):
    def make(task):
        shutil.copytree(task.repo_dir, tmp_path / task.id)
        return Workspace(tmp_path / task.id)

    return make


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_gold_replies_reproduce_the_gold_patch(task, copy):
    ws = copy(task)
    edit, replies = gold_replies(ws, task.gold_diff)  # raises GoldReplyError if a round trip differs
    assert set(replies) == {"udiff", "search_replace", "whole"}
    # whole carries every edited file in full; the diff formats carry much less
    for after in edit.after.values():
        assert after in replies["whole"]
    assert len(replies["udiff"]) < len(replies["whole"]) or edit.edited_file_lines < 30
    assert not replies["udiff"].count("diff --git")


def test_search_replace_grows_context_until_unique():
    before = "a = 1\nx = 0\nb = 2\nx = 0\nc = 3\n"
    after = "a = 1\nx = 0\nb = 2\nx = 1\nc = 3\n"
    reply = search_replace_reply(GoldEdit(before={"m.py": before}, after={"m.py": after}))
    (block,) = formats.get("search_replace").parse(reply)
    assert block.search.strip().splitlines() == ["b = 2", "x = 0"]
    assert block.replace.strip().splitlines() == ["b = 2", "x = 1"]


def test_replay_transcript_second_reply_really_fails(copy):
    task = TASKS[0]
    ws = copy(task)
    edit, replies = gold_replies(ws, task.gold_diff, ["udiff"])
    path = next(iter(edit.before))
    steps = replay_transcript(ws, path, replies["udiff"])
    assert steps[0].reply == f"VIEW {path}" and path in steps[0].feedback
    udiff = formats.get("udiff")
    with pytest.raises(PatchError):
        udiff.apply(udiff.parse(steps[1].reply), ws, dry_run=True)
    assert "could not be applied" in steps[1].feedback
    assert steps[2].reply == replies["udiff"] and steps[2].feedback == ""


def test_search_replace_blocks_stay_unique_after_earlier_blocks_apply(tmp_path):
    # block 1 turns `r = f()` into `r = g()`, so block 2's `r = g()` alone would match twice by then
    before = "p = 1\nr = f()\nq = 2\n    r = g()\n"
    after = "p = 1\nr = g()\nq = 2\n    r = h()\n"
    (tmp_path / "m.py").write_text(before)
    reply = search_replace_reply(GoldEdit(before={"m.py": before}, after={"m.py": after}))
    fmt = formats.get("search_replace")
    blocks = fmt.parse(reply)
    searched = [[ln.strip() for ln in b.search.splitlines()] for b in blocks]
    assert searched == [["r = f()"], ["q = 2", "r = g()"]]
    assert fmt.apply(blocks, Workspace(tmp_path), dry_run=True).new_contents == {"m.py": after}
