"""Start `deltaserve mcp --root DIR` as a real subprocess and call every tool through the MCP client
(stdio)."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from deltaserve.tools import sandbox
from deltaserve.tools.sandbox import bwrap_problem

EXPECTED_TOOLS = {"view", "list_files", "grep", "apply_patch", "apply_search_replace", "replace_definitions",
                  "write_file", "undo", "run_tests", "localize", "savings"}
FIX_ADD = "--- a/calc.py\n+++ b/calc.py\n@@ @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
WITH_SUB = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"
BREAK_MUL = "--- a/calc.py\n+++ b/calc.py\n@@ @@\n def mul(a, b):\n-    return a * b\n+    return 0\n"


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None)


def test_cli_help_and_bad_arguments(tmp_path, capsys):
    from deltaserve.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["mcp", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "mcpServers" in out and "(default: 300.0)" in out
    assert main(["mcp", "--root", str(tmp_path / "missing")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["mcp", "--root", str(tmp_path), "--test-timeout", "0"]) == 2
    assert "--test-timeout" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["mcp", "--root", str(tmp_path), "--sandbox", "docker"])
    assert "invalid choice: 'docker'" in capsys.readouterr().err


def test_cli_refuses_a_bwrap_sandbox_that_cannot_run(tmp_path, capsys, monkeypatch):
    from deltaserve.cli import main

    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    assert main(["mcp", "--root", str(tmp_path), "--sandbox", "bwrap"]) == 2
    err = capsys.readouterr().err
    assert "bwrap) is not installed" in err and "apt-get install bubblewrap" in err


def test_every_tool_over_stdio(workspace):
    ws = workspace({
        "calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        ".gitignore": "*.log\n",
        "debug.log": "noise\n",
    })
    script = os.path.join(os.path.dirname(sys.executable), "deltaserve")  # the installed console script
    launcher = (
        [script]
        if os.path.exists(script)
        else [sys.executable, "-c", "import sys; from deltaserve.cli import main; sys.exit(main())"]
    )
    params = StdioServerParameters(
        command=launcher[0],
        args=[*launcher[1:], "mcp", "--root", str(ws.root),
              "--test-command", "python -m pytest -q -p no:cacheprovider", "--test-timeout", "120"],
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    out: dict = {}

    async def session():
        async with Client(params, read_timeout_seconds=120) as client:
            out["tools"] = {t.name for t in (await client.list_tools()).tools}
            out["list"] = await client.call_tool("list_files", {})
            out["view"] = await client.call_tool("view", {"path": "calc.py", "start": 2, "end": 2})
            out["grep"] = await client.call_tool("grep", {"regex": r"return a"})
            out["tests_before"] = await client.call_tool("run_tests", {})
            out["patch_dry"] = await client.call_tool("apply_patch", {"diff": FIX_ADD, "dry_run": True})
            out["patch"] = await client.call_tool("apply_patch", {"diff": FIX_ADD})
            out["tests_after"] = await client.call_tool("run_tests", {})
            out["sr"] = await client.call_tool("apply_search_replace", {
                "path": "calc.py", "search": "    return a + b\n", "replace": "    return b + a\n"})
            out["defs"] = await client.call_tool("replace_definitions", {"path": "calc.py", "code": WITH_SUB})
            out["bad_defs"] = await client.call_tool("replace_definitions",
                                                     {"path": "calc.py", "code": "x = ("})
            out["write"] = await client.call_tool("write_file",
                                                  {"path": "notes/todo.txt", "content": "ship it"})
            out["defs_on_disk"] = (ws.root / "calc.py").read_text()
            out["undo_write"] = await client.call_tool("undo", {})
            out["undo_defs"] = await client.call_tool("undo", {})
            out["bad_patch"] = await client.call_tool("apply_patch", {"diff": BREAK_MUL})
            out["escape"] = await client.call_tool("view", {"path": "../../etc/passwd"})

    anyio.run(session)

    assert out["tools"] == EXPECTED_TOOLS
    assert _text(out["list"]).splitlines() == [".gitignore", "calc.py", "test_calc.py"]
    assert _text(out["view"]) == "calc.py (lines 2-2 of 2)\n[1 lines above not shown]\n2 |     return a - b"
    assert _text(out["grep"]) == "calc.py:2:     return a - b"
    assert "0 passed, 1 failed" in _text(out["tests_before"])
    assert "test_calc.py::test_add" in _text(out["tests_before"])
    assert _text(out["patch_dry"]).startswith("DRY RUN")
    assert "calc.py: updated (1 hunks: exact@1)" in _text(out["patch"])
    assert "1 passed, 0 failed" in _text(out["tests_after"]) and not out["tests_after"].is_error
    assert f"sandbox: {'none' if bwrap_problem() else 'bwrap'}" in _text(out["tests_after"])  # auto's pick
    assert not out["sr"].is_error and not out["defs"].is_error
    assert out["defs_on_disk"] == WITH_SUB
    assert out["bad_defs"].is_error and "not valid Python" in _text(out["bad_defs"])
    # undo, last edit first: the created file removed, then replace_definitions' change reverted
    assert "Undone: notes/todo.txt" in _text(out["undo_write"])
    assert not (ws.root / "notes" / "todo.txt").exists()
    assert "2 earlier edits left" in _text(out["undo_defs"])
    assert (ws.root / "calc.py").read_text() == "def add(a, b):\n    return b + a\n"
    assert out["bad_patch"].is_error
    bad_patch = _text(out["bad_patch"])
    assert "Closest lines in calc.py" in bad_patch and "No files were changed" in bad_patch
    assert out["escape"].is_error and "'..'" in _text(out["escape"])


def test_localize_over_stdio(workspace):
    """The failing test's assertion is in the test; coverage names the helper only it runs."""
    ws = workspace({
        "calc.py": ("def _scale(x):\n    if x > 10:\n        return x * 3  # bug: doubles below 10\n"
                    "    return x * 2\n\n\ndef double(x):\n    return _scale(x)\n"),
        "test_calc.py": ("from calc import double\n\n\ndef test_small():\n    assert double(2) == 4\n\n\n"
                         "def test_large():\n    assert double(20) == 40\n"),
    })
    params = StdioServerParameters(
        command=sys.executable, args=["-c", "import sys; from deltaserve.cli import main; sys.exit(main())",
                                      "mcp", "--root", str(ws.root), "--test-command",
                                      "python -m pytest -q -p no:cacheprovider"],
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    out: dict = {}

    async def session():
        async with Client(params, read_timeout_seconds=120) as client:
            out["found"] = await client.call_tool("localize", {"description": "double() of large numbers"})
            out["other"] = await client.call_tool("localize", {"command": "make test"})

    anyio.run(session)
    text = _text(out["found"])
    assert "1 passed, 1 failed" in text and not out["found"].is_error
    assert text.endswith("code they call.\n- calc.py:3 (in _scale)\n- calc.py:8 (in double)")
    assert "No suspects from coverage: not a pytest command." in _text(out["other"])


def test_undo_restores_bytes_and_mode_and_says_when_there_is_nothing(workspace):
    from deltaserve.errors import ToolError
    from deltaserve.tools import patch
    from deltaserve.tools.mcp_server import EditHistory

    ws = workspace({"run.sh": "echo hi\r\n"})
    (ws.root / "run.sh").chmod(0o755)
    history = EditHistory(ws)
    bye = "echo bye"
    history.write(lambda dry: patch.apply_search_replace(ws, "run.sh", "echo hi", bye, dry_run=dry), False)
    history.write(lambda dry: patch.write_file(ws, "run.sh", "echo bye\n", dry_run=dry), True)  # a dry run
    assert (ws.root / "run.sh").read_bytes() == b"echo bye\r\n"
    assert history.undo() == ["run.sh"]
    assert (ws.root / "run.sh").read_bytes() == b"echo hi\r\n" and os.access(ws.root / "run.sh", os.X_OK)
    with pytest.raises(ToolError, match="Nothing to undo"):
        history.undo()
