"""`udiff` (the default): the model writes a unified diff; only changed lines plus a little context.

Parsing only finds the diff text in the reply; tools.patch.apply_patch parses it (unidiff) and applies it
locating each hunk by content: exact -> rstrip -> indent -> blank-lines -> fuzzy (tools.hunks).
"""

from __future__ import annotations

import re

from deltaserve.harness.formats import whole

NAME = "udiff"
NUMBERED_CONTEXT = True  # line numbers help the model write @@ headers; the tools tolerate wrong ones

_FENCE = re.compile(r"^\s*(`{3,})\s*([\w+-]*)\s*$")
_DIFF_LINE = re.compile(r"^([ +\-\\]|@@|diff |index |new file|deleted file|similarity|rename |old mode|new mode|$)")


def instructions() -> str:
    return (
        "Edit format: unified diff. Reply with a diff in a ```diff fence: `--- a/path` and `+++ b/path` "
        "headers, then @@ hunks whose lines start with ' ' (unchanged context), '-' (removed) or '+' (added). "
        "Copy context lines exactly; change only what the fix needs.\n"
        "Example:\n\n"
        "```diff\n--- a/src/greet.py\n+++ b/src/greet.py\n@@ -1,2 +1,2 @@\n def greet(name):\n"
        "-    return \"Hello\" + name\n+    return f\"Hello, {name}!\"\n```"
    )


def _has_headers(text: str) -> bool:
    return bool(re.search(r"^--- .*\n\+\+\+ ", text, flags=re.MULTILINE))


def _fenced_blocks(reply: str) -> list[str]:
    blocks, lines, i = [], reply.splitlines(), 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == opening.group(1)), len(lines))
        blocks.append("\n".join(lines[i + 1 : end]) + "\n")
        i = end + 1
    return blocks


def _bare_diff(reply: str) -> str:
    """A diff written without a fence: from the first `--- ` header while lines still look like a diff."""
    lines = reply.splitlines()
    start = next((i for i in range(len(lines) - 1) if lines[i].startswith("--- ") and lines[i + 1].startswith("+++ ")),
                 None)
    if start is None:
        return ""
    end = start
    while end < len(lines) and _DIFF_LINE.match(lines[end]):
        end += 1
    return "\n".join(lines[start:end]).rstrip("\n") + "\n"


def parse(reply: str) -> list[str]:
    """The diff texts in a reply: fenced blocks with ---/+++ headers, else a bare diff. A reply with hunks but
    no headers (the file named on a line above the fence, say) is returned whole: tools.patch's parser
    repairs those or explains what is missing. [] if nothing looks like a diff."""
    blocks = [b for b in _fenced_blocks(reply) if _has_headers(b)]
    if not blocks:
        bare = _bare_diff(reply)
        blocks = [bare] if bare else []
    if not blocks and re.search(r"^(@@|diff --git )", reply, flags=re.MULTILINE):
        blocks = [reply if reply.endswith("\n") else reply + "\n"]
    return blocks


def apply(edits: list[str], workspace, dry_run: bool = False):
    """All diffs as one patch: all-or-nothing across files (raises tools.patch.PatchError, nothing written)."""
    from deltaserve.tools.patch import apply_patch

    return apply_patch(workspace, "".join(edits), dry_run=dry_run)


def counterfactual(edits: list[str], workspace) -> str:
    return whole.render(apply(edits, workspace, dry_run=True).new_contents)
