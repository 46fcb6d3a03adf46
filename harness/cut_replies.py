"""Replies cut off at the token limit inside a code block. Written as it is, a whole file cut short would
lose its tail, so by default nothing of such a reply is applied. A format that reads named Python blocks as
whole definitions (`symbol`, and `auto`, which reads a re-typed file's definitions) keeps what the model
finished: the cut block ends at its last complete top-level definition, and the one the cut fell in is left
out. A small model asked for one function often re-types the whole file and runs out of tokens after the
function it fixed (seen with Qwen2.5-Coder-1.5B: 9 cut replies of 171 in one 24-task run)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from deltaserve.tools.fences import fenced_blocks
from deltaserve.tools.named_blocks import named_blocks

# a line that starts a top-level definition: its decorator or its `def` / `class` line
_DEFINITION_START = re.compile(r"(@|(async\s+)?def\s|class\s)")
_NAME = re.compile(r"(?:async\s+)?(?:def|class)\s+(\w+)")


@dataclass(frozen=True)
class CutReply:
    text: str | None  # what of the reply can be applied, as a reply; None: nothing
    left_out: str | None = None  # the definition the cut fell in, when `text` keeps the ones before it


def cut_inside_a_block(text: str, finish_reason: str | None) -> bool:
    """The reply hit the token limit (finish_reason "length") while a code block was still open."""
    if finish_reason != "length":
        return False
    lines = text.replace("\r\n", "\n").split("\n")
    blocks = fenced_blocks(lines)
    return bool(blocks) and blocks[-1].end == len(lines)


def cut_reply(text: str, finish_reason: str | None, fmt) -> CutReply | None:
    """None when the reply was not cut inside a block; else the part of it `fmt` may apply."""
    if not cut_inside_a_block(text, finish_reason):
        return None
    if not getattr(fmt, "reads_definitions", False):
        return CutReply(None)
    return complete_definitions(text) or CutReply(None)


def complete_definitions(text: str) -> CutReply | None:
    """`text`, whose last code block is cut short, with that block ending before the top-level definition
    the cut fell in; None unless the block names a Python file and what is left of it parses and defines
    something."""
    lines = text.replace("\r\n", "\n").split("\n")
    blocks = fenced_blocks(lines)
    named = named_blocks(text)
    if not blocks or not named or named[-1].start != blocks[-1].start or not named[-1].path.endswith(".py"):
        return None
    body = named[-1].content.split("\n")
    starts = [i for i, line in enumerate(body)
              if _DEFINITION_START.match(line) and not (i and body[i - 1].startswith("@"))]
    if not starts:
        return None
    kept = "\n".join(body[: starts[-1]]).rstrip() + "\n"
    try:
        tree = ast.parse(kept)
    except SyntaxError:
        return None
    if not any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for node in tree.body):
        return None
    cut_at = next((m.group(1) for line in body[starts[-1]:] if (m := _NAME.match(line))), None)
    fence = blocks[-1].fence.marker
    before = "\n".join(lines[: blocks[-1].start])
    return CutReply(f"{before}\n{named[-1].path}\n{fence}\n{kept}{fence}\n", cut_at or "its last definition")
