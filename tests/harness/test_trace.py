"""The trace's run header record (what ran, where, when) and the readers that step over it."""

import json

from deltaserve.harness.accounting import RunReport, StepReport
from deltaserve.harness.events import RunStart, StepDetails
from deltaserve.harness.trace import TraceWriter, command_line, run_header, source_commit

FIELDS = ("version", "model", "machine", "command", "date")


def test_a_trace_opens_with_the_run_header_then_one_line_per_step(tmp_path):
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    writer.on_run_start(RunStart("/repo", "local/smollm2-135m", "udiff", "pytest -q", "none"))
    steps = [StepReport(step=n, action="edit", model="local/smollm2-135m", edit_format="udiff",
                        prompt_tokens=10 * n, cached_tokens=None, completion_tokens=n) for n in (1, 2)]
    for step in steps:
        writer.on_step(step, StepDetails(feedback=""))
    header, *lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert header["record"] == "header" and all(header[k] for k in FIELDS)
    assert header["model"] == "local/smollm2-135m" and header["edit_format"] == "udiff"
    assert header["test_cmd"] == "pytest -q" and header["sandbox"] == "none"
    assert [line["step"] for line in lines] == [1, 2]
    assert RunReport.from_trace(path).steps == steps


def test_a_trace_with_only_its_header_names_the_model(tmp_path):
    """A run that ended before its first step (a model that cannot be reached) still says what ran."""
    path = tmp_path / "t.jsonl"
    TraceWriter(path).on_run_start(RunStart("/repo", "openai/x", "auto", "pytest", "bwrap"))
    run = RunReport.from_trace(path)
    assert run.steps == [] and run.model == "openai/x" and run.edit_format == "auto"


def test_traces_from_before_the_header_still_read(tmp_path):
    path = tmp_path / "old.jsonl"
    path.write_text(StepReport(step=1, action="edit", model="m", prompt_tokens=1, cached_tokens=0,
                                completion_tokens=1).model_dump_json() + "\n")
    assert RunReport.from_trace(path).model == "m"


def test_run_header_fields():
    header = run_header("qwen2.5-coder-1.5b", command="deltaserve demo", task="a-median")
    assert list(header)[:5] == list(FIELDS) and header["task"] == "a-median"
    assert header["command"] == "deltaserve demo" and header["date"].endswith("UTC")
    assert "cores" in header["machine"]
    assert command_line(["/x/.venv/bin/deltaserve", "fix", "my repo"]) == "deltaserve fix 'my repo'"


def test_source_commit_reads_loose_and_packed_refs(tmp_path):
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text("# pack-refs with: peeled\n" + "b" * 40 + " refs/heads/main\n")
    assert source_commit(git) == "b" * 40
    (git / "refs" / "heads" / "main").write_text("a" * 40 + "\n")
    assert source_commit(git) == "a" * 40
    (git / "HEAD").write_text("c" * 40 + "\n")  # detached
    assert source_commit(git) == "c" * 40
    assert source_commit(tmp_path / "nowhere") is None
