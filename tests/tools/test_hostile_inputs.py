"""Hostile workspaces and diffs: each case once made the tools crash, lie or write what they should not.
Now every one is a clear ToolError with nothing changed, or the right result."""

from __future__ import annotations

import os
import random
import stat

import anyio
import pytest
from mcp import Client

from deltaserve.errors import PatchError, ToolError, WorkspaceError
from deltaserve.harness import lookups
from deltaserve.tools import files
from deltaserve.tools.hunks import FUZZY_MAX_WINDOWS, Hunk, apply_hunks
from deltaserve.tools.line_index import TakenRanges, overlaps
from deltaserve.tools.mcp_server import build_server
from deltaserve.tools.patch import apply_patch, apply_search_replace, write_file
from deltaserve.tools.textfile import NEW_FILE_MODE

MOD = "x = 1\ny = 2\nz = 3\n"
EDIT_X = "--- a/{p}\n+++ b/{p}\n@@ -1,2 +1,2 @@\n-x = 1\n+x = 10\n y = 2\n"


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# symlink loops --------------------------------------------------------------------------------------------

@pytest.fixture
def looped(workspace):
    ws = workspace({"mod.py": MOD})
    os.symlink("l2", ws.root / "l1")
    os.symlink("l1", ws.root / "l2")
    os.symlink("self", ws.root / "self")
    return ws


@pytest.mark.parametrize("path", ["l1", "self", "l1/inner.py"])
def test_symlink_loop_is_a_workspace_error_everywhere(looped, snapshot, path):
    before = snapshot(looped.root)
    for call in (looped.exists, looped.resolve, looped.read_text, lambda p: files.view(looped, p)):
        with pytest.raises(WorkspaceError, match="symbolic link loop"):
            call(path)
    for edit in (lambda: apply_patch(looped, EDIT_X.format(p=path)), lambda: write_file(looped, path, "a\n"),
                 lambda: apply_search_replace(looped, path, "x = 1\n", "x = 2\n"),
                 lambda: apply_patch(looped, f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+new = 1\n")):
        with pytest.raises(PatchError, match="symbolic link loop") as exc:
            edit()
        assert "No files were changed" in exc.value.message
    assert snapshot(looped.root) == before
    assert "mod.py" in files.list_files(looped) and "l1" not in files.list_files(looped)
    assert files.grep(looped, "x = 1") == "mod.py:1: x = 1"


def test_symlink_loop_reaches_the_model_through_the_mcp_server_and_the_agents_lookups(looped):
    out = {}

    async def session():
        async with Client(build_server(looped.root)) as client:
            out["view"] = await client.call_tool("view", {"path": "l1"})
            out["patch"] = await client.call_tool("apply_patch", {"diff": EDIT_X.format(p="l1")})

    anyio.run(session)
    for result in out.values():
        assert result.is_error
        assert "symbolic link loop" in "".join(c.text for c in result.content)
    answer = lookups.serve(lookups.Lookup("view", "l1"), looped)
    assert "symbolic link loop" in answer


def test_os_errors_become_workspace_errors(workspace):
    ws = workspace({"mod.py": MOD})
    with pytest.raises(WorkspaceError, match="too long"):
        ws.resolve("a" * 300 + ".py")
    with pytest.raises(WorkspaceError, match="too long"):
        ws.resolve("/".join(["d" * 200] * 30))
    with pytest.raises(PatchError, match="a part of the path is a file"):
        write_file(ws, "mod.py/inner.py", "x\n")
    assert ws.exists("mod.py/inner.py") is False
    os.mkfifo(ws.root / "fifo")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        ws.read_text("fifo")
    with pytest.raises(PatchError, match="not a regular file"):
        write_file(ws, "fifo", "x\n")


# mode lines -----------------------------------------------------------------------------------------------

def _git_mode_diff(path: str, header: str) -> str:
    return (f"diff --git a/{path} b/{path}\n{header}\n--- a/{path}\n+++ b/{path}\n"
            "@@ -1 +1 @@\n-x = 1\n+x = 2\n")


@pytest.mark.parametrize("header,why", [
    ("old mode 100644\nnew mode 100999", "invalid mode line 'new mode 100999'"),
    ("new mode zz", "invalid mode line"),
    ("old mode 100644\nnew mode 104777", "invalid mode line 'new mode 104777'"),
    ("old mode 100644\nnew mode 100000", "invalid mode line"),
    ("old mode 100644\nnew mode 120000", "not a symbolic link"),
    ("old mode 100644\nnew mode 160000", "not a submodule"),
    ("old mode 777\nnew mode 100755", "invalid mode line 'old mode 777'"),
])
def test_invalid_mode_lines_are_patch_errors(workspace, snapshot, header, why):
    ws = workspace({"m.py": "x = 1\n"})
    before = snapshot(ws.root)
    with pytest.raises(PatchError, match="100644 \\(regular\\) or 100755|regular files only") as exc:
        apply_patch(ws, _git_mode_diff("m.py", header))
    assert why in exc.value.message
    assert snapshot(ws.root) == before


@pytest.mark.parametrize("mode", ["zz", "104777", "100000", "100666"])
def test_invalid_new_file_modes_create_nothing(workspace, snapshot, mode):
    ws = workspace({"m.py": "x = 1\n"})
    before = snapshot(ws.root)
    diff = (f"diff --git a/new.sh b/new.sh\nnew file mode {mode}\n--- /dev/null\n+++ b/new.sh\n"
            "@@ -0,0 +1 @@\n+echo hi\n")
    with pytest.raises(PatchError, match="invalid mode line"):
        apply_patch(ws, diff)
    assert snapshot(ws.root) == before


def test_modes_mean_executable_or_not(workspace):
    ws = workspace({"run.sh": "x = 1\n", "tool.sh": "x = 1\n"})
    os.chmod(ws.root / "run.sh", 0o640)
    os.chmod(ws.root / "tool.sh", 0o751)
    apply_patch(ws, _git_mode_diff("run.sh", "old mode 100644\nnew mode 100755"))
    assert _mode(ws.root / "run.sh") == 0o750  # execute where it can be read, nothing more
    apply_patch(ws, _git_mode_diff("tool.sh", "old mode 100755\nnew mode 100644"))
    assert _mode(ws.root / "tool.sh") == 0o640
    apply_patch(ws, "diff --git a/new.sh b/new.sh\nnew file mode 100755\n--- /dev/null\n+++ b/new.sh\n"
                    "@@ -0,0 +1 @@\n+echo hi\n")
    assert _mode(ws.root / "new.sh") == NEW_FILE_MODE | ((NEW_FILE_MODE & 0o444) >> 2)
    # A mode-only change is a change: reported and written.
    result = apply_patch(ws, "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n")
    assert result.files_changed == ["run.sh"] and _mode(ws.root / "run.sh") == 0o640


# symlinks inside the workspace ----------------------------------------------------------------------------

@pytest.fixture
def linked(workspace):
    ws = workspace({"src/mod.py": MOD, "src/other.py": "a = 1\n"})
    os.symlink("src/mod.py", ws.root / "link.py")
    os.symlink("src", ws.root / "lib")
    os.link(ws.root / "src/other.py", ws.root / "hard.py")
    return ws


def test_deleting_a_symlink_never_deletes_its_target(linked, snapshot):
    before = snapshot(linked.root)
    diff = "diff --git a/link.py b/link.py\ndeleted file mode 100644\n--- a/link.py\n+++ /dev/null\n" \
           "@@ -1,3 +0,0 @@\n-x = 1\n-y = 2\n-z = 3\n"
    with pytest.raises(PatchError, match="'link.py' is a symbolic link \\(to 'src/mod.py'\\)") as exc:
        apply_patch(linked, diff)
    assert "edit 'src/mod.py' itself" in exc.value.message
    assert snapshot(linked.root) == before


@pytest.mark.parametrize("alias", ["link.py", "lib/mod.py"])
def test_a_file_and_a_link_to_it_in_one_diff_are_refused(linked, snapshot, alias):
    before = snapshot(linked.root)
    diff = EDIT_X.format(p="src/mod.py") + f"--- a/{alias}\n+++ b/{alias}\n@@ -3 +3 @@\n-z = 3\n+z = 30\n"
    with pytest.raises(PatchError, match="symbolic link") as exc:
        apply_patch(linked, diff)
    assert "never write or delete through links" in exc.value.message
    assert snapshot(linked.root) == before
    with pytest.raises(PatchError, match="symbolic link"):
        write_file(linked, alias, "pwned\n")
    assert snapshot(linked.root) == before


def test_two_hard_links_in_one_diff_are_refused(linked, snapshot):
    before = snapshot(linked.root)
    diff = ("--- a/src/other.py\n+++ b/src/other.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
            "--- a/hard.py\n+++ b/hard.py\n@@ -1 +1 @@\n-a = 1\n+a = 3\n")
    with pytest.raises(PatchError, match="are the same file"):
        apply_patch(linked, diff)
    assert snapshot(linked.root) == before


def test_links_are_still_read_through(linked):
    assert files.view(linked, "link.py").endswith("1 | x = 1\n2 | y = 2\n3 | z = 3")
    assert linked.read_text("lib/mod.py") == MOD
    apply_patch(linked, EDIT_X.format(p="src/mod.py"))  # the file itself: edited as usual
    assert linked.read_text("link.py").startswith("x = 10\n")
    assert os.path.islink(linked.root / "link.py")


# diffs that change nothing --------------------------------------------------------------------------------

@pytest.mark.parametrize("diff,why", [
    ("--- a/mod.py\n+++ b/mod.py\n", "has file headers but no hunks"),
    ("diff --git a/mod.py b/mod.py\nindex 1234567..89abcde 100644\n", "has file headers but no hunks"),
    ("--- a/mod.py\n+++ b/mod.py\n@@ -1,3 +1,3 @@\nI changed x to 10 in this file.\n",
     "has file headers but no hunks"),
    ("--- a/mod.py\n+++ b/mod.py\n@@ -1,2 +1,2 @@\n x = 1\n y = 2\n", "its hunks leave every line"),
    ("--- a/mod.py\n+++ b/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = 1\n", "its hunks leave every line"),
])
def test_a_diff_that_changes_nothing_is_an_error(workspace, snapshot, diff, why):
    ws = workspace({"mod.py": MOD})
    before = snapshot(ws.root)
    for dry_run in (True, False):
        with pytest.raises(PatchError, match="your diff has no changes: it names mod.py") as exc:
            apply_patch(ws, diff, dry_run=dry_run)
        assert why in exc.value.message
    assert snapshot(ws.root) == before


def test_a_header_only_diff_naming_a_missing_file_creates_nothing(workspace, snapshot):
    ws = workspace({"mod.py": MOD})
    before = snapshot(ws.root)
    with pytest.raises(PatchError):
        apply_patch(ws, "--- a/missing.py\n+++ b/missing.py\n")
    assert snapshot(ws.root) == before


def test_other_edits_that_change_nothing_are_errors(workspace, snapshot):
    ws = workspace({"mod.py": MOD})
    before = snapshot(ws.root)
    with pytest.raises(PatchError, match="SEARCH/REPLACE blocks have no changes"):
        apply_search_replace(ws, "mod.py", "y = 2\n", "y = 2\n")
    assert write_file(ws, "mod.py", MOD).files_changed == []  # a whole file re-sent as it is: no error
    assert snapshot(ws.root) == before


def test_an_empty_new_file_is_still_a_change(workspace):
    ws = workspace({"mod.py": MOD})
    result = apply_patch(ws, "diff --git a/pkg/__init__.py b/pkg/__init__.py\nnew file mode 100644\n"
                             "index 0000000..e69de29\n")
    assert result.files_changed == ["pkg/__init__.py"] and (ws.root / "pkg/__init__.py").read_bytes() == b""


# NUL bytes ------------------------------------------------------------------------------------------------

def test_nul_bytes_in_new_text_are_refused(workspace, snapshot):
    ws = workspace({"mod.py": MOD})
    before = snapshot(ws.root)
    edits = [
        lambda: apply_patch(ws, "--- a/mod.py\n+++ b/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = '\x00'\n"),
        lambda: apply_patch(ws, "--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+a\x00b\n"),
        lambda: apply_search_replace(ws, "mod.py", "y = 2\n", "y = '\x00'\n"),
        lambda: write_file(ws, "mod.py", "x\x00\n"),
    ]
    for edit in edits:
        with pytest.raises(PatchError, match="NUL byte"):
            edit()
    assert snapshot(ws.root) == before
    assert ws.read_text("mod.py") == MOD  # still text to every tool


# many hunks and long files (correctness here; speed: scripts/bench_hunks.py) ----------------------------

def test_thousands_of_hunks_apply_exactly(workspace):
    n = 3000
    lines = [f"def f{i}():\n    return {i}\n\n" for i in range(n)]
    ws = workspace({"big.py": "".join(lines)})
    diff = ["--- a/big.py\n+++ b/big.py\n"]
    for i in range(n):
        diff.append(f"@@ -{3 * i + 1},2 +{3 * i + 1},2 @@\n def f{i}():\n-    return {i}\n+    return -{i}\n")
    result = apply_patch(ws, "".join(diff))
    assert len(result.hunks) == n and {h.strategy for h in result.hunks} == {"exact"}
    assert ws.read_text("big.py") == "".join(f"def f{i}():\n    return -{i}\n\n" for i in range(n))


def test_a_hunk_resembling_too_many_places_is_refused():
    file_lines = [f"    value_{i} = compute({i}, 'payload {i % 97}')" for i in range(3 * FUZZY_MAX_WINDOWS)]
    hunk = Hunk([(" ", "    value_x = compute(7, 'payload 12')"),
                 ("-", "    value_y = compute(8, 'payload 13')"),
                 ("+", "    gone = 1"), (" ", "    value_z = compute(9, 'payload 14')")])
    with pytest.raises(ToolError, match=f"more than {FUZZY_MAX_WINDOWS} places in the file resemble them"):
        apply_hunks(file_lines, ["\n"] * len(file_lines), [hunk])


def test_taken_ranges_agree_with_the_pairwise_rule():
    rnd = random.Random(7)
    for _ in range(300):
        taken, pairs = TakenRanges(), []
        for _ in range(40):
            start, length = rnd.randint(0, 60), rnd.choice([0, 0, 1, 2, 3, 5])
            naive = any(overlaps(start, length, s, size) for s, size in pairs)
            assert taken.overlaps(start, length) == naive, (start, length, pairs)
            if not naive:
                taken.add(start, length)
                pairs.append((start, length))
