"""The tools as an MCP server (stdio): view, grep, list_files, apply_patch, apply_search_replace,
replace_definitions, write_file, undo, run_tests, localize and savings over one workspace root. Start with
`deltaserve mcp --root DIR`.

Every edit the server writes can be undone, last first (`undo`): the files it changed come back byte for
byte (tools/checkpoint.py), a file it created is removed. Undo acts only on what the edit left: a file
changed, deleted, or swapped for a link or a directory since is refused by name, never overwritten, and
links are never followed. Edits and undos are serialised, so concurrent calls neither lose edits nor
undo out of order.

With an EditAccounting (tools/edit_accounting.py), every edit's result also carries its decode accounting
(the edit's tokens, the whole-file counterfactual's, the tokens saved) as a text line and as structured
content, and `savings` returns the running totals; without one, `savings` says accounting is off.

Every failure a model can cause (bad path, patch that does not apply, ...) comes back as a tool error whose
text is the same model-facing message the Python API raises, so the calling agent can correct itself.
run_tests runs in the server's sandbox (tools.sandbox: auto, bwrap, none), chosen when the server is built,
so a bwrap that cannot run here is a SandboxError before it serves anything.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError
from mcp.types import CallToolResult, TextContent

from deltaserve import errors
from deltaserve.tools import files, patch, tests
from deltaserve.tools import localize as localization
from deltaserve.tools.checkpoint import Checkpoint
from deltaserve.tools.edit_accounting import EditAccounting, SavingsTotals
from deltaserve.tools.sandbox import choose
from deltaserve.tools.workspace import Workspace

MAX_LISTED_FILES = 1000
UNDO_REFUSED = ("Undo refused, nothing was changed: the last edit's files are not what it left, and undoing "
                "it would overwrite or delete what is there now.\n{reasons}\nThe edit stays the next to "
                "undo: put those files back as the edit left them (or as they were before it) and call undo "
                "again.")


def _model_errors(fn):
    """Expected failures become MCP ToolErrors carrying their message (not 'Error executing tool')."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except errors.ToolError as exc:
            raise MCPToolError(exc.message) from None

    return wrapper


def _patch_text(result: patch.PatchResult, dry_run: bool) -> str:
    head = "DRY RUN, nothing written.\n" if dry_run else ""
    return head + result.summary() + ("\n\n" + result.diff if result.diff else "")


def _edit_result(result: patch.PatchResult, dry_run: bool, edit_text: str | None,
                 accounting: EditAccounting | None) -> CallToolResult:
    """The edit's text for the model; with accounting, its cost line and the same figures as structured
    content (a dry run is priced but not added to the totals: nothing was written)."""
    text = _patch_text(result, dry_run)
    if accounting is None:
        return CallToolResult(content=[TextContent(type="text", text=text)])
    cost = accounting.cost(edit_text, result.new_contents)
    if not dry_run:
        accounting.record(cost)
    return CallToolResult(content=[TextContent(type="text", text=f"{text}\n\n{cost.line()}")],
                          structured_content=cost.model_dump())


class EditHistory:
    """The edits written so far, each with its checkpoint, for `undo`. The server runs tool calls in
    threads, so writes and undos take one lock: an edit reads, checks and writes its files with no other
    edit in between (else concurrent edits of one file overwrite each other), and the stack changes in the
    order the files did."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.done: list[tuple[Checkpoint, list[str]]] = []
        self.lock = threading.Lock()

    def write(self, edit: Callable[[bool], patch.PatchResult], dry_run: bool) -> patch.PatchResult:
        """`edit(dry_run)` for real, remembering the files it changes as they were (a dry run first: it
        raises before anything is written when the edit cannot apply) and as it left them."""
        with self.lock:
            if dry_run:
                return edit(True)
            changed = edit(True).files_changed
            checkpoint = Checkpoint(self.ws, changed)
            result = edit(False)
            if result.files_changed:
                checkpoint.note_written()
                self.done.append((checkpoint, list(result.files_changed)))
            return result

    def undo(self) -> list[str]:
        """Undo the last edit, only where its files are still what it left (a file changed, linked or
        replaced since is someone else's now): otherwise refuse, keeping the edit on the stack."""
        with self.lock:
            if not self.done:
                raise errors.ToolError("Nothing to undo: no edit has been written through this server.")
            checkpoint, paths = self.done[-1]
            changed = checkpoint.changes_since()
            if changed:
                raise errors.ToolError(UNDO_REFUSED.format(reasons="\n".join(f"- {r}" for r in changed)))
            checkpoint.restore()
            self.done.pop()
            return paths


def build_server(root: str | os.PathLike[str], test_command: str = tests.DEFAULT_COMMAND,
                 test_timeout: float = 300.0, accounting: EditAccounting | None = None,
                 sandbox: str = "auto") -> MCPServer:
    ws, box = Workspace(root), choose(sandbox)
    history = EditHistory(ws)
    mcp = MCPServer(
        "deltaserve-tools",
        instructions=f"File, patch and test tools over the workspace {ws.root}. Paths are relative to it.",
    )

    @mcp.tool()
    @_model_errors
    def view(path: str, start: int | None = None, end: int | None = None) -> str:
        """Show a text file with 1-based line numbers; optionally only lines start..end (inclusive)."""
        return files.view(ws, path, start, end)

    @mcp.tool()
    @_model_errors
    def list_files(pattern: str | None = None) -> str:
        """List files (honouring .gitignore); `pattern` is a glob such as '*.py' or 'src/*.py'."""
        found = files.list_files(ws, pattern)
        shown = found[:MAX_LISTED_FILES]
        hidden = len(found) - len(shown)
        note = f"\n[{hidden} more files not listed; give a pattern]" if hidden else ""
        return ("\n".join(shown) or "no files") + note

    @mcp.tool()
    @_model_errors
    def grep(regex: str, path_glob: str | None = None, ignore_case: bool = False) -> str:
        """Search file contents with a Python regex; results as 'path:line: text', capped."""
        return files.grep(ws, regex, path_glob, ignore_case=ignore_case)

    @mcp.tool()
    @_model_errors
    def apply_patch(diff: str, dry_run: bool = False) -> CallToolResult:
        """Apply a unified diff (one or more files; new, deleted, renamed). All or nothing."""
        result = history.write(lambda dry: patch.apply_patch(ws, diff, dry_run=dry), dry_run)
        return _edit_result(result, dry_run, diff, accounting)

    @mcp.tool()
    @_model_errors
    def apply_search_replace(path: str, search: str, replace: str, dry_run: bool = False) -> CallToolResult:
        """Replace the single place in `path` matching `search` with `replace` (an empty search creates
        the file)."""
        result = history.write(lambda dry: patch.apply_search_replace(ws, path, search, replace, dry_run=dry),
                               dry_run)
        return _edit_result(result, dry_run, "\n".join((path, search, replace)), accounting)

    @mcp.tool()
    @_model_errors
    def replace_definitions(path: str, code: str, dry_run: bool = False) -> CallToolResult:
        """Replace whole Python functions or classes by name: `code` holds the complete new version of each
        one you change (a method may be written alone, without its class); new ones are added beside their
        neighbours. Nothing old is copied, and it costs a function, not the file. All or nothing."""
        result = history.write(lambda dry: patch.replace_definitions(ws, path, code, dry_run=dry), dry_run)
        return _edit_result(result, dry_run, "\n".join((path, code)), accounting)

    @mcp.tool()
    @_model_errors
    def write_file(path: str, content: str, dry_run: bool = False) -> CallToolResult:
        """Replace or create a whole file (keeps an existing file's newline style and mode)."""
        result = history.write(lambda dry: patch.write_file(ws, path, content, dry_run=dry), dry_run)
        return _edit_result(result, dry_run, None, accounting)  # a whole-file reply: it saves nothing

    @mcp.tool()
    @_model_errors
    def undo() -> str:
        """Undo the last edit written through this server (then the one before it, and so on): its files
        come back exactly as they were, a file it created is removed."""
        paths = history.undo()
        return f"Undone: {', '.join(paths)} as before that edit ({len(history.done)} earlier edits left)."

    @mcp.tool()
    @_model_errors
    def run_tests(command: str | None = None, timeout_s: float | None = None) -> str:
        """Run the test command (default: the server's) in the workspace: counts, failing tests, output."""
        timeout = min(timeout_s or test_timeout, test_timeout)
        res = tests.run_tests(ws, command or test_command, timeout=timeout, sandbox=box)
        return f"{res.summary()}\nduration {res.duration_s:.1f}s, sandbox: {res.sandbox}\n\n{res.output}"

    @mcp.tool()
    @_model_errors
    def localize(command: str | None = None, description: str = "", timeout_s: float | None = None) -> str:
        """Where a bug may be: run the tests, then the failing tests' files once more under coverage, and
        name the three functions the failing tests run that are most suspicious, those only they run
        first (pytest commands only). `description` (the bug in words) breaks ties between equally
        suspicious functions."""
        timeout = min(timeout_s or test_timeout, test_timeout)
        command = command or test_command
        res = tests.run_tests(ws, command, timeout=timeout, sandbox=box)
        if res.ok:
            return "The tests pass: nothing to localize."
        found = localization.localize(ws, res.failing_tests, command, timeout, box, description)
        return f"{res.summary()}\n\n{found.describe()}"

    @mcp.tool()
    def savings() -> SavingsTotals:
        """Decode tokens this server's edits saved against whole-file replies, totalled since it started:
        edits, their tokens, the whole-file replies' tokens and the difference."""
        if accounting is None:
            raise MCPToolError("decode accounting is off: the server was started without a token counter")
        return accounting.totals()

    return mcp


def serve(root: str | os.PathLike[str], test_command: str = tests.DEFAULT_COMMAND,
          test_timeout: float = 300.0, accounting: EditAccounting | None = None,
          sandbox: str = "auto") -> None:
    build_server(root, test_command, test_timeout, accounting, sandbox).run("stdio")
