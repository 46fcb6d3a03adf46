"""Edits and undo over the real MCP client (stdio, the `mcp` SDK) when calls race each other and when the
files change behind the server's back (issue 42, items 7 and 8)."""

from __future__ import annotations

import os
import sys

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

LINES = 40
ORIGINAL = "".join(f"value_{i} = {i}\n" for i in range(LINES))


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None)


def _params(root) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "import sys; from deltaserve.cli import main; sys.exit(main())",
              "mcp", "--root", str(root), "--sandbox", "none"],
    )


def _session(root, steps):
    """Run `steps(client, out)` against a fresh server over `root`; returns `out`."""
    out: dict = {}

    async def session():
        async with Client(_params(root), read_timeout_seconds=120) as client:
            await steps(client, out)

    anyio.run(session)
    return out


async def _all_at_once(calls):
    """Await every coroutine in `calls` concurrently; their results in order."""
    results = [None] * len(calls)

    async def one(i, call):
        results[i] = await call

    async with anyio.create_task_group() as group:
        for i, call in enumerate(calls):
            group.start_soon(one, i, call)
    return results


def test_concurrent_edits_all_land_and_concurrent_undos_restore_the_original(workspace):
    ws = workspace({"values.py": ORIGINAL})

    async def steps(client, out):
        out["edits"] = await _all_at_once([client.call_tool("apply_search_replace", {
            "path": "values.py", "search": f"value_{i} = {i}\n", "replace": f"value_{i} = -{i}\n"})
            for i in range(LINES)])
        out["edited"] = (ws.root / "values.py").read_text()
        out["undos"] = await _all_at_once([client.call_tool("undo", {}) for _ in range(LINES)])

    out = _session(ws.root, steps)
    assert all(not r.is_error and "updated" in _text(r) for r in out["edits"])
    assert out["edited"] == "".join(f"value_{i} = -{i}\n" for i in range(LINES))  # every edit landed
    assert all(not r.is_error and "Undone" in _text(r) for r in out["undos"])
    assert (ws.root / "values.py").read_text() == ORIGINAL


def test_undo_of_a_created_file_swapped_for_a_link_leaves_the_target_alone(workspace):
    ws = workspace({"keep.txt": "precious\n"})

    async def steps(client, out):
        await client.call_tool("write_file", {"path": "new.txt", "content": "made by the server\n"})
        os.unlink(ws.root / "new.txt")
        os.symlink("keep.txt", ws.root / "new.txt")
        out["undo"] = await client.call_tool("undo", {})

    out = _session(ws.root, steps)
    assert out["undo"].is_error and "new.txt" in _text(out["undo"]) and "symbolic link" in _text(out["undo"])
    assert (ws.root / "keep.txt").read_text() == "precious\n"
    assert os.readlink(ws.root / "new.txt") == "keep.txt"


def test_undo_of_an_edited_file_swapped_for_a_link_does_not_write_into_the_target(workspace):
    ws = workspace({"a.txt": "old\n", "other.txt": "other\n"})

    async def steps(client, out):
        await client.call_tool("apply_search_replace", {"path": "a.txt", "search": "old", "replace": "new"})
        os.unlink(ws.root / "a.txt")
        os.symlink("other.txt", ws.root / "a.txt")
        out["undo"] = await client.call_tool("undo", {})

    out = _session(ws.root, steps)
    assert out["undo"].is_error and "symbolic link" in _text(out["undo"])
    assert (ws.root / "other.txt").read_text() == "other\n"
    assert os.path.islink(ws.root / "a.txt")


def test_undo_refuses_to_discard_an_edit_made_outside_the_server_and_keeps_its_entry(workspace):
    ws = workspace({"a.txt": "one\ntwo\n"})

    async def steps(client, out):
        await client.call_tool("apply_search_replace", {"path": "a.txt", "search": "one", "replace": "1"})
        (ws.root / "a.txt").write_text("1\ntwo\nby hand\n")
        out["refused"] = await client.call_tool("undo", {})
        out["kept"] = (ws.root / "a.txt").read_text()
        (ws.root / "a.txt").write_text("1\ntwo\n")  # back as the server left it: undo works again
        out["undo"] = await client.call_tool("undo", {})

    out = _session(ws.root, steps)
    refused = _text(out["refused"])
    assert out["refused"].is_error and "a.txt" in refused and "changed since" in refused
    assert out["kept"] == "1\ntwo\nby hand\n"
    assert not out["undo"].is_error and (ws.root / "a.txt").read_text() == "one\ntwo\n"


def test_undo_of_a_created_file_replaced_by_a_directory_says_so_and_keeps_its_entry(workspace):
    ws = workspace({"a.txt": "a\n"})

    async def steps(client, out):
        await client.call_tool("write_file", {"path": "made.txt", "content": "x\n"})
        os.unlink(ws.root / "made.txt")
        os.mkdir(ws.root / "made.txt")
        out["refused"] = await client.call_tool("undo", {})
        os.rmdir(ws.root / "made.txt")  # gone, as undo would leave it: the entry is still there to undo
        out["undo"] = await client.call_tool("undo", {})

    out = _session(ws.root, steps)
    refused = _text(out["refused"])
    assert out["refused"].is_error and "made.txt is a directory now" in refused  # not a bare "Error ..."
    assert not out["undo"].is_error and "Undone: made.txt" in _text(out["undo"])
