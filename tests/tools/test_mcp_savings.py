"""Decode accounting over MCP: `deltaserve mcp` as a real subprocess, the mcp SDK's stdio client applies
edits and reads each result's savings fields and the `savings` totals; they must equal what the harness's
own token counter and `whole` renderer give for the same edits."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from deltaserve.harness import accounting
from deltaserve.harness.formats import whole
from deltaserve.harness.tokens import TokenCounter
from deltaserve.tools.edit_accounting import EditAccounting
from deltaserve.tools.mcp_server import build_server

TOKENIZER = "smollm2-135m"  # the server's default; given explicitly so the test names what it compares
BODY = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(20))
SOURCE = "def add(a, b):\n    return a - b\n\n\n" + BODY
FIX = "--- a/calc.py\n+++ b/calc.py\n@@ @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"


def _launcher() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "deltaserve")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-c", "import sys; from deltaserve.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def counter():
    return TokenCounter(TOKENIZER)


def _expected(counter, edit_text: str, new_contents: dict) -> dict:
    whole_tokens = accounting.whole_file_tokens(new_contents, counter.count)  # what the agent reports
    edit = counter.count(edit_text)
    return {"edit_tokens": edit, "whole_file_tokens": whole_tokens, "decode_saved": whole_tokens - edit}


def test_edit_results_and_savings_totals_over_stdio(workspace, counter):
    ws = workspace({"calc.py": SOURCE})
    launcher = _launcher()
    args = [*launcher[1:], "mcp", "--root", str(ws.root), "--tokenizer", TOKENIZER]
    params = StdioServerParameters(command=launcher[0], args=args)
    out: dict = {}
    search, replace = "    return x + 3\n", "    return x + 33\n"

    async def session():
        async with Client(params, read_timeout_seconds=180) as client:
            out["before"] = await client.call_tool("savings", {})
            out["dry"] = await client.call_tool("apply_patch", {"diff": FIX, "dry_run": True})
            out["after_dry"] = await client.call_tool("savings", {})
            out["patch"] = await client.call_tool("apply_patch", {"diff": FIX})
            out["sr"] = await client.call_tool("apply_search_replace",
                                               {"path": "calc.py", "search": search, "replace": replace})
            out["write"] = await client.call_tool("write_file", {"path": "notes.txt", "content": "ship it\n"})
            out["bad"] = await client.call_tool("apply_patch", {"diff": FIX})  # already applied: fails
            out["totals"] = await client.call_tool("savings", {})

    anyio.run(session)

    fixed = SOURCE.replace("a - b", "a + b")
    patch_cost = _expected(counter, FIX, {"calc.py": fixed})
    sr_cost = _expected(counter, "\n".join(("calc.py", search, replace)),
                        {"calc.py": fixed.replace(search, replace)})
    write_cost = _expected(counter, whole.render({"notes.txt": "ship it\n"}), {"notes.txt": "ship it\n"})
    assert out["dry"].structured_content == patch_cost
    assert out["patch"].structured_content == patch_cost
    assert out["sr"].structured_content == sr_cost
    assert out["write"].structured_content == write_cost
    assert patch_cost["decode_saved"] > 0 and sr_cost["decode_saved"] > 0  # a 2-line edit in an 82-line file
    assert write_cost["decode_saved"] == 0  # write_file is a whole-file reply: nothing saved
    text = "\n".join(c.text for c in out["patch"].content)
    assert "calc.py: updated" in text
    assert (f"decode tokens: this edit {patch_cost['edit_tokens']}, whole-file reply "
            f"{patch_cost['whole_file_tokens']}, saved {patch_cost['decode_saved']}") in text
    assert out["bad"].is_error

    def totals(result) -> dict:
        assert not result.is_error
        data = dict(result.structured_content)
        assert data.pop("tokenizer") == TOKENIZER and data.pop("started_at").endswith("Z")
        return data

    zero = {"edits": 0, "edit_tokens": 0, "whole_file_tokens": 0, "decode_saved": 0}
    assert totals(out["before"]) == zero
    assert totals(out["after_dry"]) == zero  # a dry run writes nothing, so it saves nothing
    costs = (patch_cost, sr_cost, write_cost)
    summed = {k: sum(c[k] for c in costs) for k in zero if k != "edits"}
    assert totals(out["totals"]) == {"edits": 3, **summed}


def test_tools_rendering_is_the_harness_whole_reply(counter):
    """The server prices the counterfactual with whatever renderer it is given; the CLI gives the harness's,
    so an edit's whole_file_tokens is what the agent's StepReport would say, deleted files included."""
    priced = EditAccounting(counter.count, whole.render)
    contents = {"a.py": "x = 1\n", "gone.py": None, "b/c.py": "y = 2"}
    cost = priced.cost("diff text", contents)
    assert cost.whole_file_tokens == accounting.whole_file_tokens(contents, counter.count)
    assert priced.cost(None, contents).decode_saved == 0
    assert priced.cost("", {}).model_dump() == {"edit_tokens": 0, "whole_file_tokens": 0, "decode_saved": 0}


def test_savings_without_accounting_is_a_clear_tool_error(workspace):
    server = build_server(workspace({"a.py": "x = 1\n"}).root)
    out = {}

    async def session():
        async with Client(server) as client:
            out["savings"] = await client.call_tool("savings", {})
            out["write"] = await client.call_tool("write_file", {"path": "a.py", "content": "x = 2\n"})

    anyio.run(session)
    assert out["savings"].is_error and "accounting is off" in out["savings"].content[0].text
    assert not out["write"].is_error and out["write"].structured_content is None


def test_unknown_tokenizer_is_refused(tmp_path, capsys):
    from deltaserve.cli import main

    assert main(["mcp", "--root", str(tmp_path), "--tokenizer", str(tmp_path / "no-such-model")]) == 2
    err = capsys.readouterr().err
    assert "unknown model" in err and "no-such-model" in err  # refused by the naming rule, with what works


def test_the_tokenizer_is_read_when_the_first_edit_is_priced(monkeypatch, counter):
    """The server answers its client before reading its tokenizer (0.3 s for the 1.5B model's, holding the
    GIL): Codex's first turn carries the tools of the MCP servers that answered within about a second."""
    from deltaserve.cli import mcp

    read = []
    monkeypatch.setattr(mcp, "read_tokenizer", lambda path: read.append(path) or counter.tokenizer)
    priced = mcp.edit_accounting(TOKENIZER)
    assert read == []
    cost = priced.cost(FIX, {"calc.py": SOURCE})
    assert cost.edit_tokens == counter.count(FIX)
    assert read and {p.name for p in read} == {"tokenizer.json"}  # (read_tokenizer keeps what it read)
