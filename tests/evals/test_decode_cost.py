"""The decode-cost eval end to end on a tiny random model: real prompts, real forced decoding, real files."""

import json

import pytest

from deltaserve.cli import main
from deltaserve.evals.decode_cost import (
    DecodeCostConfig,
    force,
    load_engine,
    reply_token_ids,
    run_decode_cost_eval,
)
from deltaserve.evals.gold_replies import gold_replies
from deltaserve.evals.results import load_rows, rows_of
from deltaserve.evals.task_suite import load_tasks
from deltaserve.tools.workspace import Workspace

TASK = "a-median"  # the smallest edited file: keeps the test quick


@pytest.fixture(scope="module")
def engine(tiny_llama_8k):
    return load_engine(DecodeCostConfig(model=str(tiny_llama_8k), dtype="float32", threads=1))


@pytest.fixture(scope="module")
def run(tiny_llama_8k, engine, tmp_path_factory):
    out = tmp_path_factory.mktemp("dc")
    result = run_decode_cost_eval(
        DecodeCostConfig(model=str(tiny_llama_8k), task_ids=[TASK], out_dir=out, progress=False),
        engine=engine)
    return out, result


def test_rows_carry_the_engines_numbers(run, engine):
    out, _ = run
    rows = load_rows(out / "results.jsonl")
    dc = rows_of(rows, "decode_cost")
    assert sorted(r["format"] for r in dc) == ["search_replace", "udiff", "whole"]
    task = load_tasks(ids=[TASK])[0]  # the same replies, rebuilt, tokenized independently
    _, replies = gold_replies(Workspace(task.repo_dir), task.gold_diff)
    for r in dc:
        reply_ids = engine.tokenizer.encode(replies[r["format"]], add_special_tokens=False)
        expected = len(reply_ids) + 1  # + end of turn
        assert r["reply_tokens"] == expected == r["completion_tokens"]
        assert not r["capped"] and r["forced_matches"]
        assert 0 < r["decode_passes"] <= r["completion_tokens"]
        assert r["prompt_tokens"] > 100 and 0 <= r["cached_tokens"] < r["prompt_tokens"]
        assert r["ttft_s"] > 0 and r["decode_s"] > 0 and r["predicted_decode_s"] > 0
        assert r["edited_file_lines"] == 24
    by = {r["format"]: r for r in dc}
    assert by["whole"]["reply_tokens"] > by["udiff"]["reply_tokens"] > by["search_replace"]["reply_tokens"]


def test_replay_reuses_the_prefix_only_with_the_cache_on(run):
    out, result = run
    rows = rows_of(load_rows(out / "results.jsonl"), "replay")
    on = {r["step"]: r for r in rows if r["cache"] == "on"}
    off = {r["step"]: r for r in rows if r["cache"] == "off"}
    assert sorted(on) == sorted(off) == [1, 2, 3]
    assert on[1]["cached_tokens"] == 0  # a fresh salt: nothing from before this transcript
    for step in (2, 3):
        # each step's prompt extends the previous prompt + reply: all but the new tail is served from cache
        assert on[step]["prompt_tokens"] > on[step - 1]["prompt_tokens"]
        assert on[step]["cached_tokens"] >= on[step - 1]["prompt_tokens"] - 16  # block granularity
        assert off[step]["cached_tokens"] == 0
        assert on[step]["prompt_tokens"] == off[step]["prompt_tokens"]
    assert result["summary"]["replay prefill from cache (steps 2+)"] > 0.5


def test_files_written_and_plots_are_pngs(run):
    out, result = run
    for name in ("results.jsonl", "report.md", "decode_tokens.png", "decode_seconds.png"):
        assert (out / name).is_file(), name
    for name in ("decode_tokens.png", "decode_seconds.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    report = (out / "report.md").read_text()
    assert TASK in report and "whole/udiff" in report and "Multi-step replay" in report
    assert result["summary"]["whole/udiff decode tokens"] > 1


def test_cap_forces_only_the_first_tokens(engine):
    prompt = engine.apply_chat_template([{"role": "user", "content": "fix it"}])
    reply = reply_token_ids(engine, "x = 1\n" * 40)
    out, n = force(engine, prompt, reply, cap=10)
    assert n == 10 and out.metrics.completion_tokens == 10 and out.token_ids == reply[:10]


def test_cli_decode_cost_caps_replies_and_rejects_bad_formats(tiny_llama_8k, tmp_path, capsys):
    out = tmp_path / "cli"
    code = main(["eval", "decode-cost", "--model", str(tiny_llama_8k), "--tasks", TASK, "--no-replay",
                 "--formats", "search_replace", "--max-reply-tokens", "8", "--dtype", "float32",
                 "--threads", "1", "--out", str(out)])
    assert code == 0
    run, row = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert run["kind"] == "run" and run["model"] == str(tiny_llama_8k) and run["engine"]["dtype"] == "float32"
    assert row["format"] == "search_replace" and row["capped"] and row["completion_tokens"] == 8
    assert row["reply_tokens"] > 8
    assert "decode cost: summary" in capsys.readouterr().out
    assert main(["eval", "decode-cost", "--model", str(tiny_llama_8k), "--formats", "nope",
                 "--out", str(out)]) == 1
    assert "unknown formats" in capsys.readouterr().err


def test_speculation_shows_in_passes_and_accepted_drafts(tiny_llama_8k, tmp_path):
    # the whole-file reply repeats the file the prompt shows: prompt-lookup / prediction drafts are accepted
    out = tmp_path / "spec"
    assert main(["eval", "decode-cost", "--model", str(tiny_llama_8k), "--tasks", TASK, "--no-replay",
                 "--formats", "whole", "--speculative", "suffix", "--dtype", "float32", "--threads", "1",
                 "--out", str(out)]) == 0
    _, row = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert row["speculative"] and row["prediction"] and row["forced_matches"]
    assert row["completion_tokens"] == row["reply_tokens"]
    assert row["accepted_draft_tokens"] > 0
    assert row["decode_passes"] < row["completion_tokens"] - 1
