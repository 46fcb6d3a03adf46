"""`deltaserve fix` wiring: arguments, refusing a dirty checkout, --copy, a model that cannot be reached."""

import json
import subprocess

import pytest

from deltaserve.cli import main
from deltaserve.tools import sandbox


def git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_help_lists_every_option(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    with pytest.raises(SystemExit) as exc:
        main(["fix", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "examples:" in text and "(default: local/qwen2.5-coder-1.5b)" in text
    for option in ["--task", "--test-cmd", "--model", "--api-base", "--format", "--max-steps", "--max-tokens",
                   "--trace", "--dry-run", "--allow-dirty", "--copy", "--threads", "--sandbox",
                   "--temperature", "--test-timeout", "--show-replies", "--diff-out"]:
        assert option in text


def test_refuses_dirty_git_checkout_and_changes_nothing(project, capsys):
    git(project, "init", "-q")
    (project / "notes.txt").write_text("uncommitted work")
    code = main(["fix", str(project), "--task", "fix add", "--model", "openai/none", "--api-base",
                 "http://127.0.0.1:9/v1"])
    assert code == 2 and "--copy" in capsys.readouterr().err
    assert (project / "notes.txt").read_text() == "uncommitted work"


def test_copy_with_an_unreachable_model_ends_cleanly(project, test_cmd, tmp_path, capsys):
    git(project, "init", "-q")
    (project / "notes.txt").write_text("uncommitted work")
    trace = tmp_path / "t.jsonl"
    code = main(["fix", str(project), "--copy", "--task", "fix add", "--test-cmd", test_cmd,
                 "--model", "openai/none", "--api-base", "http://127.0.0.1:9/v1", "--trace", str(trace),
                 "--max-steps", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "working on a copy" in out and "model call failed" in out
    assert [json.loads(line)["record"] for line in trace.read_text().splitlines()] == ["header"]  # no steps


def test_bad_arguments(project, capsys):
    assert main(["fix", str(project / "missing"), "--task", "x"]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["fix", str(project), "--task", "x", "--max-steps", "0"]) == 2
    assert main(["fix", str(project), "--task", "x", "--threads", "0"]) == 2
    assert main(["fix", str(project), "--task", "x", "--candidates", "0"]) == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_unknown_local_model_is_refused_before_the_run(project, capsys):
    assert main(["fix", str(project), "--task", "x", "--model", "local/no-such-model"]) == 2
    captured = capsys.readouterr()
    assert "unknown model 'local/no-such-model'" in captured.err and "what works:" in captured.err
    assert "Step 0" not in captured.out  # the tests did not run


def test_top_level_help_and_no_command(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in ["fix", "serve", "mcp"]:
        assert f"deltaserve {command} " in out  # an example of each
    assert main([]) == 2 and "COMMAND" in capsys.readouterr().out


def test_a_bwrap_sandbox_that_cannot_run_is_refused_before_the_run(project, capsys, monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    code = main(["fix", str(project), "--task", "x", "--allow-dirty", "--sandbox", "bwrap",
                 "--model", "local/no-such-model"])  # refused before the model would fail to load
    captured = capsys.readouterr()
    assert code == 2 and "apt-get install bubblewrap" in captured.err and "Step 0" not in captured.out


def test_the_run_header_names_the_sandbox_asked_for(project, test_cmd, capsys):
    code = main(["fix", str(project), "--copy", "--task", "fix add", "--test-cmd", test_cmd,
                 "--sandbox", "none", "--model", "openai/none", "--api-base", "http://127.0.0.1:9/v1",
                 "--max-steps", "1"])
    assert code == 1 and "sandbox=none" in capsys.readouterr().out


def test_a_local_model_loads_only_once_the_tests_show_something_to_fix(project, test_cmd, tmp_path, capsys):
    """The model loads after step 0: a test command that runs no test stops the run without loading it (a
    mistyped --test-cmd is said in seconds, not after the load), and a broken model is a clear error
    before the first prompt when there is something to fix."""
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "llama"}')  # no weights: its load fails
    common = ["fix", str(project), "--task", "fix add", "--allow-dirty", "--sandbox", "none",
              "--model", str(broken), "--max-steps", "1"]
    assert main([*common, "--test-cmd", "no_such_command_xyz"]) == 1
    captured = capsys.readouterr()
    assert "Stopped: the tests did not run: the test command was not found" in captured.out
    assert "cannot load" not in captured.err
    assert main([*common, "--test-cmd", test_cmd]) == 2
    captured = capsys.readouterr()
    assert "cannot load" in captured.err and "has no *.safetensors" in captured.err
    assert "Stopped" not in captured.out
