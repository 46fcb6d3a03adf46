"""Replies the bundled 1.5B model wrote in agent-eval runs (tests/harness/recorded/*.trace.jsonl, one with
its steps' replies paired as two candidates), replayed through the harness: every step's outcome, action,
edits, test counts, candidates and the feedback the model was told, every prompt sent (by hash) and how the
run ended are what the harness made of them before the one pipeline (replayed_before.json: written by
scripts/replay_replies.py --record on that tree, with --tokenizer chars --model openai/replay-model)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import pytest

RECORDED = Path(__file__).parent / "recorded"
BEFORE = json.loads((RECORDED / "replayed_before.json").read_text())
_SCRIPT = Path(__file__).parents[2] / "scripts" / "replay_replies.py"


def _replay_module():
    spec = importlib.util.spec_from_file_location("replay_replies", _SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _name(run: dict) -> str:
    task, _, rest = run["trace"].split("__", 2)
    return f"{task}-{rest.removesuffix('.trace.jsonl')}"


@pytest.mark.parametrize("before", BEFORE, ids=_name)
def test_recorded_replies_replay_as_before(before, monkeypatch):
    # the task's pytest output (part of the feedback) is shaped by these: pytest keeps short-summary lines
    # whole when $CI is set and cuts them to the width otherwise; the recording had neither set
    for name in ("CI", "BUILD_NUMBER", "PYTEST_ADDOPTS", "FORCE_COLOR", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    replay = _replay_module()
    run = replay.record(RECORDED / before["trace"], None, "chars", "openai/replay-model")
    run["prompts"] = [hashlib.sha1(json.dumps(p).encode()).hexdigest() for p in run["prompts"]]
    assert replay.differences(before, run) == []
