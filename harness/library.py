"""The harness for another agent's replies, with no model call: `parse` a reply in any edit format into one
type, `apply` it all or nothing, `price` it (its tokens, the whole-file reply's, the decode saved).

    from deltaserve.harness import TokenCounter, apply, parse, price
    parsed = parse(reply_text, "search_replace")       # a ParsedReply, whatever the format
    cost = price(parsed, "path/to/project", TokenCounter("qwen2.5-coder-1.5b"))   # tools' EditCost
    result = apply(parsed, "path/to/project")           # PatchResult; PatchError and nothing written

The formats are the agent's own (harness/formats), the figures the agent's step reports' (`whole_file_tokens`)
and the MCP server's (`EditCost`), so the three agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deltaserve.errors import DiffParseError, PatchError
from deltaserve.harness import formats
from deltaserve.harness.accounting import whole_file_tokens
from deltaserve.harness.formats.auto import AutoFormat, member_for
from deltaserve.harness.formats.base import EditFormat
from deltaserve.harness.tokens import TokenCounter
from deltaserve.tools.diff_parse import parse_diff, strip_ab
from deltaserve.tools.edit_accounting import EditCost
from deltaserve.tools.fences import fenced_blocks
from deltaserve.tools.patch import PatchResult
from deltaserve.tools.workspace import Workspace

# Why a code block of a reply holds no edit, per format that read the reply (written for the model).
NO_EDIT_IN_BLOCK = {
    "whole": "it names no file: write the file's path alone on the line above the fence",
    "symbol": "it names no Python file (whole functions are for .py files; other files take SEARCH/REPLACE "
              "blocks)",
    "search_replace": "it holds no SEARCH/REPLACE block after a file path",
    "udiff": "it holds no diff with `--- a/path` and `+++ b/path` headers",
    "auto": "it holds no edit in any format: no file path above it, no SEARCH/REPLACE block, no diff",
}


@dataclass(frozen=True)
class SkippedBlock:
    """A code block of the reply read as no edit (prose, an example, a file left unnamed)."""

    line: int  # 1-based line of its opening fence
    first_line: str  # its first non-blank line, as written
    reason: str  # why it is no edit, for the model


@dataclass(frozen=True)
class ParsedReply:
    """A reply read by one edit format, the same type whatever the format."""

    format: str  # the format whose syntax the edits are in (`auto`: the one it recognised)
    edits: tuple[Any, ...]  # the format's own edits, in order, as its `apply` takes them
    files: tuple[str, ...]  # the files they name, in order, each once (a diff's are read from its headers)
    skipped: tuple[SkippedBlock, ...]  # code blocks that hold no edit
    text: str = field(repr=False)  # the reply as parsed
    reader: EditFormat = field(repr=False, compare=False)  # the format object that parsed it, and applies it


def parse(reply: str, format: str | EditFormat = formats.DEFAULT) -> ParsedReply:
    """`reply` read by `format` (a registered name or an EditFormat). Prose and code blocks that hold no
    edit are skipped (listed in `skipped`); a malformed edit raises PatchError, whose message the model
    can read. No edits at all: `edits` is empty."""
    reader = formats.get(format) if isinstance(format, str) else format
    edits = tuple(reader.parse(reply))
    name = member_for(list(edits)).name if edits and isinstance(reader, AutoFormat) else reader.name
    return ParsedReply(name, edits, _files(edits), _skipped(reply, reader, name), reply, reader)


def apply(parsed: ParsedReply, workspace: Workspace | str | Path, dry_run: bool = False) -> PatchResult:
    """Every edit of `parsed`, all or nothing: PatchError (its `message` written for the model) and nothing
    written when any edit fails; nothing written at all with `dry_run`. No edits: an empty PatchResult."""
    if not parsed.edits:
        return PatchResult()
    return parsed.reader.apply(list(parsed.edits), _workspace(workspace), dry_run=dry_run)


def price(parsed: ParsedReply, workspace: Workspace | str | Path,
          count: Callable[[str], int] | str) -> EditCost:
    """What the reply cost to decode and saved, with nothing written: `edit_tokens`, the reply's tokens;
    `whole_file_tokens`, those of the `whole` reply carrying the same edits (every changed file re-typed
    in full); `decode_saved` = whole_file_tokens - edit_tokens (negative when the reply cost more).
    `count`: a TokenCounter, a model name for one, or any text -> tokens function. Raises PatchError when
    the edits would not apply."""
    count = TokenCounter(count) if isinstance(count, str) else count
    new_contents = apply(parsed, workspace, dry_run=True).new_contents
    whole, edit = whole_file_tokens(new_contents, count), count(parsed.text)
    return EditCost(edit_tokens=edit, whole_file_tokens=whole, decode_saved=whole - edit)


def _workspace(workspace: Workspace | str | Path) -> Workspace:
    return workspace if isinstance(workspace, Workspace) else Workspace(workspace)


def _files(edits: tuple[Any, ...]) -> tuple[str, ...]:
    paths: list[str] = []
    for edit in edits:
        if isinstance(edit, str):  # a unified diff, possibly of several files
            try:
                paths += [strip_ab(fp.old_path if fp.is_deleted else fp.new_path) for fp in parse_diff(edit)]
            except DiffParseError:
                continue
        elif isinstance(getattr(edit, "path", None), str):
            paths.append(edit.path)
    return tuple(dict.fromkeys(paths))


def _skipped(reply: str, reader: EditFormat, name: str) -> tuple[SkippedBlock, ...]:
    """The code blocks that, read with the prose before them by the format that read the reply, hold no
    edit."""
    block_reader = formats.get(name) if name != reader.name and name in formats.names() else reader
    lines = reply.replace("\r\n", "\n").split("\n")
    reason = NO_EDIT_IN_BLOCK.get(name, f"it holds no edit in the `{name}` format")
    skipped, after = [], 0
    for block in fenced_blocks(lines):
        segment = "\n".join(lines[after : block.end + 1]) + "\n"
        after = block.end + 1
        try:
            if block_reader.parse(segment):
                continue
        except PatchError:  # a malformed edit is an edit, not prose
            continue
        first = next((line for line in block.body if line.strip()), "")
        skipped.append(SkippedBlock(block.start + 1, first, reason))
    return tuple(skipped)
