"""`deltaserve fix` as a newcomer runs it, in a subprocess: a model named by its path, the new options
(--temperature, --test-timeout, --show-replies, --diff-out), a --copy that leaves nothing in the temp dir,
and output that fits 80 columns."""

from __future__ import annotations

import os
import subprocess
import sys

CLI = [sys.executable, "-c", "import sys; from deltaserve.cli import main; sys.exit(main())"]


def test_fix_on_a_copy_with_a_model_dir_at_80_columns(project, tiny_llama, tmp_path, test_cmd):
    temp = tmp_path / "tmp"
    temp.mkdir()
    diff = tmp_path / "fix.diff"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "80", "TMPDIR": str(temp)}
    result = subprocess.run(
        [*CLI, "fix", str(project), "--copy", "--task", "fix add", "--model", str(tiny_llama),
         "--test-cmd", test_cmd, "--test-timeout", "60", "--temperature", "0", "--max-steps", "1",
         "--max-tokens", "8", "--show-replies", "--diff-out", str(diff), "--sandbox", "none", "--no-localize",
         "--threads", "1"],
        capture_output=True, text=True, env=env, timeout=600)
    out = result.stdout
    assert result.returncode == 1, result.stderr  # random weights fix nothing
    assert f"model=local/{tiny_llama}" in out  # the path ran on the in-process engine
    assert "step 1: the model's reply (8 tokens)" in out
    assert "step" in out and "outcome" in out and "left out at this width" in out  # the step table, narrowed
    # every line fits, but those naming a long temporary path (the copy, the diff file)
    assert max(len(line) for line in out.splitlines() if str(tmp_path) not in line) <= 80, out
    assert diff.is_file() and f"{diff} is empty" in out
    assert not list(temp.glob("deltaserve-fix-*"))  # the copy is gone
    assert "Pass `dtype" not in result.stderr and "Traceback" not in result.stderr


def test_a_killed_run_removes_its_copy(project, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    slow = f"{sys.executable} -c 'import time; time.sleep(60)'"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(temp), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([*CLI, "fix", str(project), "--copy", "--task", "x", "--model", "openai/none",
                             "--api-base", "http://127.0.0.1:9/v1", "--test-cmd", slow, "--sandbox", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first = proc.stdout.readline()
    assert first.startswith("working on a copy:") and list(temp.glob("deltaserve-fix-*"))
    proc.terminate()  # SIGTERM while the tests run
    assert proc.wait(timeout=60) == 143
    assert not list(temp.glob("deltaserve-fix-*"))
