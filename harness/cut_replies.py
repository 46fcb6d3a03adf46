"""Replies cut off at the token limit inside a code block. Written as it is, a file cut short would lose
its tail, so by default nothing of such a reply is applied. Under a format that reads named Python blocks
as whole definitions (`symbol`, `auto`), the definitions the model finished are kept: the cut block ends
before the top-level statement the cut fell in, and what is left is read as whole functions (`symbol`),
whatever the step asked for, so it never replaces a file. A small model asked for one function often
re-types the whole file and runs out of tokens after the function it fixed (Qwen2.5-Coder-1.5B: 9 cut
replies of 171 in one 24-task run)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from deltaserve.errors import ToolError
from deltaserve.harness.formats.symbol import SymbolFormat, block_code
from deltaserve.tools.fences import fenced_blocks
from deltaserve.tools.named_blocks import named_blocks
from deltaserve.tools.symbols import parse_python
from deltaserve.tools.workspace import Workspace

_NAME = re.compile(r"(?:async\s+)?(?:def|class)\s+(\w+)")
_NOT_A_START = ("#", ")", "]", "}")  # column-0 lines that cannot begin a statement


@dataclass(frozen=True)
class CutReply:
    text: str | None  # what of the reply can be applied, as a reply; None: nothing
    left_out: str = ""  # what the cut fell in, for the feedback
    reader: SymbolFormat | None = None  # the format `text` is read and applied with


def cut_inside_a_block(text: str, finish_reason: str | None) -> bool:
    """The reply hit the token limit (finish_reason "length") while a code block was still open, or in a
    Python block that its budget then closed (our engine's symbol constraint closes the fence; where no line
    end near the budget parsed, the code inside is cut all the same)."""
    if finish_reason != "length":
        return False
    lines = text.replace("\r\n", "\n").split("\n")
    blocks = fenced_blocks(lines)
    if not blocks or blocks[-1].end == len(lines):
        return bool(blocks)
    named = named_blocks(text)
    last = named[-1] if named and named[-1].start == blocks[-1].start else None
    return (last is not None and last.path.endswith(".py") and "<<<<<<< SEARCH" not in last.content
            and parse_python(block_code(last.content)) is None)


def cut_reply(text: str, finish_reason: str | None, fmt, workspace: Workspace) -> CutReply | None:
    """None when the reply was not cut inside a block; else the part of it that may be applied."""
    if not cut_inside_a_block(text, finish_reason):
        return None
    if not getattr(fmt, "reads_definitions", False):
        return CutReply(None)
    return complete_definitions(text, workspace) or CutReply(None)


def complete_definitions(text: str, workspace: Workspace) -> CutReply | None:
    """`text`, whose last code block is cut short, with that block ending before the top-level statement
    the cut fell in; None unless the block names an existing Python file (a new one would be written
    short) and what is left of it parses and defines something."""
    lines = text.replace("\r\n", "\n").split("\n")
    blocks = fenced_blocks(lines)
    named = named_blocks(text)
    if not blocks or not named or named[-1].start != blocks[-1].start:
        return None
    path = named[-1].path
    try:
        if not path.endswith(".py") or not workspace.exists(path):
            return None
    except ToolError:  # a refused path: nothing of it is applied, as for any cut reply
        return None
    body = named[-1].content.split("\n")
    starts = [i for i, line in enumerate(body) if line[:1].strip() and not line.startswith(_NOT_A_START)]
    for start in reversed(starts):  # the latest statement boundary before which the code is complete
        kept = "\n".join(body[:start]).rstrip() + "\n"
        last = _last_definition(kept)
        if last is not None:
            cut_in = next((m.group(1) for line in body[start:] if (m := _NAME.match(line))), None)
            fence = blocks[-1].fence.marker
            before = "\n".join(lines[: blocks[-1].start])
            return CutReply(f"{before}\n{path}\n{fence}\n{kept}{fence}\n",
                            f"`{cut_in}`" if cut_in else f"the code after `{last}`", SymbolFormat())
    return None


def _last_definition(code: str) -> str | None:
    """The name of the last top-level function or class of `code`; None if it defines none or does not
    parse."""
    tree = parse_python(code)
    if tree is None:
        return None
    names = [node.name for node in tree.body
             if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    return names[-1] if names else None
