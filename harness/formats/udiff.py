"""`udiff`: the model writes a unified diff; only changed lines plus a little context.

Parsing only finds the diff text in the reply; tools.patch.apply_patch parses it (unidiff) and applies it
locating each hunk by content: exact -> rstrip -> indent -> blank-lines -> fuzzy (tools.hunks).
"""

from __future__ import annotations

import re

from deltaserve.harness.formats.whole import render
from deltaserve.tools.fences import fenced_blocks
from deltaserve.tools.patch import PatchResult, apply_patch
from deltaserve.tools.workspace import Workspace

_DIFF_LINE = re.compile(  # a blank line may keep the CR of a CRLF reply
    r"^([ +\-\\]|@@|diff |index |new file|deleted file|similarity|rename |old mode|new mode|\r?$)")
_HEADERS = re.compile(r"^--- .*\n\+\+\+ ", flags=re.MULTILINE)
_HUNK_OR_GIT_LINE = re.compile(r"^(@@|diff --git )", flags=re.MULTILINE)


def _lines(reply: str) -> list[str]:
    r"""The reply's lines, split at "\n" only: str.splitlines also splits at a form feed, \v, \x1c-\x1e, \x85
    and \u2028/\u2029, which a diff line may hold (a ^L page break in a source file)."""
    return reply.removesuffix("\n").split("\n")


def _bare_diff(reply: str) -> str:
    """A diff written without a fence: from the first `--- ` header while lines still look like a diff."""
    lines = _lines(reply)
    start = next((i for i in range(len(lines) - 1)
                  if lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ")), None)
    if start is None:
        return ""
    end = start
    while end < len(lines) and _DIFF_LINE.match(lines[end]):
        end += 1
    return "\n".join(lines[start:end]).rstrip("\n") + "\n"


def _fenced_diffs(reply: str, max_indent: int | None) -> list[str]:
    """Fenced blocks with ---/+++ headers. Fences at the margin first: inside a diff, " ```" is a context
    line (a Markdown file's code block, a docstring's example) and must not close the diff's fence."""
    fenced = ("\n".join(block.body) + "\n" for block in fenced_blocks(_lines(reply), max_indent))
    return [text for text in fenced if _HEADERS.search(text)]


class UdiffFormat:
    name = "udiff"
    numbered_context = True  # line numbers help the model write @@ headers; the tools tolerate wrong ones

    def instructions(self) -> str:
        return (
            "Edit format: unified diff. Reply with a diff in a ```diff fence: `--- a/path` and `+++ b/path` "
            "headers, then @@ hunks whose lines start with ' ' (unchanged context), '-' (removed) or '+' "
            "(added). Copy context lines exactly; change only what the fix needs.\n"
            "The shape of a reply (placeholders, not real code):\n\n"
            "```diff\n--- a/path/to/file.py\n+++ b/path/to/file.py\n@@ -10,3 +10,3 @@\n <an unchanged line>\n"
            "-<the old line>\n+<the new line>\n <an unchanged line>\n```"
        )

    def parse(self, reply: str) -> list[str]:
        """The diff texts in a reply: fenced blocks with ---/+++ headers, else a bare diff. A reply with hunks
        but no headers (the file named on a line above the fence, say) is returned whole: tools.patch's
        parser repairs those or explains what is missing. [] if nothing looks like a diff."""
        diffs = _fenced_diffs(reply, max_indent=0) or _fenced_diffs(reply, max_indent=None)
        if not diffs:
            bare = _bare_diff(reply)
            diffs = [bare] if bare else []
        if not diffs and _HUNK_OR_GIT_LINE.search(reply):
            diffs = [reply if reply.endswith("\n") else reply + "\n"]
        return diffs

    def apply(self, edits: list[str], workspace: Workspace, dry_run: bool = False) -> PatchResult:
        """All diffs as one patch: all-or-nothing across files (raises PatchError, nothing written)."""
        return apply_patch(workspace, "".join(edits), dry_run=dry_run)

    def counterfactual(self, edits: list[str], workspace: Workspace) -> str:
        return render(self.apply(edits, workspace, dry_run=True).new_contents)
