"""The agent eval's logic with litellm mock_response models: rows, the independent solved check, resume."""

import shutil

import pytest

from deltaserve.evals.agent_eval import AgentEvalConfig, run_agent_eval
from deltaserve.evals.gold_replies import gold_replies
from deltaserve.evals.report import report_from_file
from deltaserve.evals.results import append_row, load_rows, rows_of
from deltaserve.evals.task_suite import load_tasks
from deltaserve.harness.formats import whole
from deltaserve.tools.workspace import Workspace

TASK = "a-median"
GOLD = "openai/gpt-4o-mini"  # litellm never calls out: every reply is a mock_response; counting is tiktoken's
CLUELESS = "openai/gpt-4o"


@pytest.fixture(scope="module")
def gold_udiff(tmp_path_factory):
    task = load_tasks(ids=[TASK])[0]
    ws = tmp_path_factory.mktemp("gold") / "repo"
    shutil.copytree(task.repo_dir, ws)
    return gold_replies(Workspace(ws), task.gold_diff, ["udiff"])[1]["udiff"]


def scripted(gold_udiff):
    def run_kwargs(task, model, fmt):
        if model == GOLD:
            return {"mock_response": gold_udiff}
        if fmt == "whole":  # "fixes" the bug by gutting the tests (allowed: the eval must catch it)
            tests = task.repo_dir / "tests" / "test_summary.py"
            cheat = whole.render({"tests/test_summary.py": "def test_nothing():\n    pass\n"})
            return {"mock_response": cheat if tests.is_file() else "no", "allow_test_edits": True}
        return {"mock_response": "I am not sure what to change."}

    return run_kwargs


def test_runs_are_recorded_and_a_rerun_resumes(tmp_path, gold_udiff):
    out = tmp_path / "agent"
    config = AgentEvalConfig(models=[GOLD], formats=["udiff"], task_ids=[TASK], max_steps=1, out_dir=out,
                             progress=False, run_kwargs=scripted(gold_udiff))
    first = run_agent_eval(config)
    assert (first["ran"], first["skipped"]) == (1, 0)
    (row,) = rows_of(load_rows(out / "results.jsonl"), "agent")
    assert row["solved"] and row["steps"] == 1 and row["error"] is None
    assert row["completion_tokens"] > 0 and row["whole_file_tokens"] > row["completion_tokens"]
    assert row["decode_saved"] == row["whole_file_tokens"] - row["completion_tokens"]
    assert row["prompt_tokens"] > 0 and row["wall_s"] > 0  # a plain mock_response reports a dummy usage
    assert row["suspects"] and all(s.startswith("quickstats/") for s in row["suspects"])  # code, not tests

    # the rerun adds a model: only the new run happens
    config.models = [GOLD, CLUELESS]
    second = run_agent_eval(config)
    assert (second["ran"], second["skipped"]) == (1, 1)
    rows = {r["model"]: r for r in rows_of(load_rows(out / "results.jsonl"), "agent")}
    assert len(rows_of(load_rows(out / "results.jsonl"), "agent")) == 2
    assert not rows[CLUELESS]["solved"] and rows[CLUELESS]["steps"] == 1
    report = (out / "report.md").read_text()
    assert "Agent runs" in report and CLUELESS in report
    # each invocation that ran something recorded what ran where; the report opens with them
    runs = rows_of(load_rows(out / "results.jsonl"), "run")
    assert [r["model"] for r in runs] == [GOLD, f"{GOLD}, {CLUELESS}"] and all(r["machine"] for r in runs)
    assert report.startswith("# deltaserve eval report\n\n| run | version | model | machine | command |")
    assert (out / "agent.png").read_bytes()[:4] == b"\x89PNG"
    # from the traces: the gold udiff applied (tests ran), the clueless prose reply had no edits
    assert f"| {GOLD} | udiff | early stop | 1 | 1 | 1.00 | - | 0 |" in report  # streamed, watched
    assert f"| {CLUELESS} | udiff | early stop | 1 | 0 | 0.00 | no edits 1 | 0 |" in report

    # a run that ended in an error is tried again; the report keeps only the latest row per run
    append_row(out / "results.jsonl", {**rows[CLUELESS], "error": "ConnectionError: boom"})
    lines_before = len(load_rows(out / "results.jsonl"))
    third = run_agent_eval(config)
    assert (third["ran"], third["skipped"]) == (0, 2)  # the CLUELESS key has an ok row already
    assert len(load_rows(out / "results.jsonl")) == lines_before


def test_decodings_are_runs_of_their_own_compared_in_one_report(tmp_path):
    # a reply quoting a line the file lacks: applied as it is (plain) it fails; watched, it is cut there
    bad = ("quickstats/summary.py\n```\n<<<<<<< SEARCH\ndef median(values):\n"
           "    raise SystemExit('no line of the module reads like this one')\n    return values\n"
           "=======\ndef median(values):\n    return 0\n>>>>>>> REPLACE\n```\n")
    out = tmp_path / "agent"
    config = AgentEvalConfig(models=[GOLD], formats=["search_replace"], decodings=["plain", "early-stop"],
                             task_ids=[TASK], max_steps=1, out_dir=out, progress=False,
                             run_kwargs=lambda task, model, fmt: {"mock_response": bad})
    assert run_agent_eval(config)["ran"] == 2
    rows = {r["decoding"]: r for r in rows_of(load_rows(out / "results.jsonl"), "agent")}
    assert (rows["plain"]["early_stops"], rows["plain"]["decode_budget_unspent"]) == (0, 0)
    assert rows["early-stop"]["early_stops"] == 1
    stopped = rows["early-stop"]
    assert stopped["completion_tokens"] > 0  # counted up to the cut (a mock's usage is a dummy's)
    assert stopped["decode_budget_unspent"] == config.max_tokens - stopped["completion_tokens"]
    assert sorted(p.name for p in (out / "runs").glob("*.trace.jsonl")) == [
        f"{TASK}__openai_gpt-4o-mini__search_replace__early-stop.trace.jsonl",
        f"{TASK}__openai_gpt-4o-mini__search_replace__plain.trace.jsonl"]
    report = (out / "report.md").read_text()
    assert f"| {GOLD} | search_replace | early stop | 1 | 0 | 0.00 | stopped early 1 | 0 |" in report
    assert f"| {GOLD} | search_replace | plain | 1 | 0 | 0.00 | apply failed 1 | 0 |" in report
    with pytest.raises(ValueError, match="unknown decoding 'sideways'"):
        run_agent_eval(AgentEvalConfig(models=[GOLD], decodings=["sideways"], out_dir=out, progress=False))


def test_editing_the_tests_does_not_count_as_solved(tmp_path, gold_udiff):
    out = tmp_path / "agent"
    config = AgentEvalConfig(models=[CLUELESS], formats=["whole"], task_ids=[TASK], max_steps=1, out_dir=out,
                             progress=False, run_kwargs=scripted(gold_udiff), localize=False)
    run_agent_eval(config)
    (row,) = rows_of(load_rows(out / "results.jsonl"), "agent")
    assert row["suspects"] == []  # not asked for
    assert row["stopped"] == "tests pass"  # the agent believed it
    assert not row["solved"]  # the original tests, restored, still fail


def test_a_report_merges_runs_of_several_formats(tmp_path, gold_udiff):
    outs = []
    for fmt in ("udiff", "whole"):
        outs.append(tmp_path / fmt)
        run_agent_eval(AgentEvalConfig(models=[GOLD], formats=[fmt], task_ids=[TASK], max_steps=1,
                                       out_dir=outs[-1], progress=False, run_kwargs=scripted(gold_udiff)))
    paths = report_from_file([o / "results.jsonl" for o in outs], tmp_path / "merged")
    report = paths["report"].read_text()
    assert f"| {GOLD} | udiff | 1 | default | 1 | 1 |" in report
    # the gold udiff is not a whole-format reply: it parses as no file, so nothing was written
    assert f"| {GOLD} | whole | 1 | default | 1 | 0 |" in report
    assert report.count(f"| {TASK} | {GOLD} |") == 2


def test_workers_run_several_at_once_and_record_each_once(tmp_path, gold_udiff):
    """Runs on two workers: every run recorded once with its own outcome, and a rerun resumes."""
    out = tmp_path / "agent"
    config = AgentEvalConfig(models=[GOLD, CLUELESS], formats=["udiff"], task_ids=[TASK], max_steps=1,
                             out_dir=out, progress=False, run_kwargs=scripted(gold_udiff), workers=2)
    result = run_agent_eval(config)
    assert (result["ran"], result["skipped"]) == (2, 0)
    rows = {r["model"]: r for r in rows_of(load_rows(out / "results.jsonl"), "agent")}
    assert len(rows) == 2 and rows[GOLD]["solved"] and not rows[CLUELESS]["solved"]
    assert all(r["error"] is None for r in rows.values())
    config.formats = ["udiff", "search_replace"]  # the rerun resumes: only the two new runs
    assert run_agent_eval(config)["ran"] == 2
    keys = [(r["model"], r["format"]) for r in rows_of(load_rows(out / "results.jsonl"), "agent")]
    assert sorted(keys) == sorted({(m, f) for m in (GOLD, CLUELESS) for f in ("udiff", "search_replace")})
