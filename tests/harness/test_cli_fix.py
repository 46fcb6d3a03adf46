"""`deltaserve fix` wiring: arguments, refusing a dirty checkout, --copy, a model that cannot be reached."""

import subprocess

from harness.cli import main


def git(root, *args):
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_help_lists_every_option(capsys):
    try:
        main(["fix", "--help"])
    except SystemExit as exc:
        assert exc.code == 0
    text = capsys.readouterr().out
    for option in ["--task", "--test-cmd", "--model", "--api-base", "--format", "--max-steps", "--max-tokens",
                   "--trace", "--dry-run", "--allow-dirty", "--copy", "--threads"]:
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
    code = main(["fix", str(project), "--copy", "--task", "fix add", "--test-cmd", test_cmd, "--model", "openai/none",
                 "--api-base", "http://127.0.0.1:9/v1", "--trace", str(trace), "--max-steps", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "working on a copy" in out and "model call failed" in out
    assert trace.read_text() == ""


def test_bad_arguments(project, capsys):
    assert main(["fix", str(project / "missing"), "--task", "x"]) == 2
    assert main(["fix", str(project), "--task", "x", "--max-steps", "0"]) == 2
    assert main(["fix", str(project), "--task", "x", "--threads", "0"]) == 2
