"""The `symbol` edit format as a Lark grammar (llguidance's dialect): a reply is one or more blocks, each a
Python file in play alone on a line, then a ```python fence holding complete definitions.

What it guarantees: every block names one of the files, and its fence opens with definitions: imports
(optional), then a `def`/`class` (decorated, async or indented as a method alone: all allowed), and every
line at the margin after that starts another definition, decorator, import or comment, or closes a bracket
(black's `):`); the rest is indented. Names and bodies stay free: a new function is as welcome as an old
one, and the code is the model's. So the reply parses as definitions of those files; whether they are
right is for the tests. The fixed text (the fence lines) is forced, so it is drafted and verified in one pass.
"""

from __future__ import annotations

import ast
import json
import textwrap

# a decorator's start: a name or a bracket after the @ (a diff's "@@" hunk header is no Python)
_DECORATOR = r"@[ \t]*[A-Za-z_(]"
# a line at the margin that may follow the first definition (anything else there would end the code)
_AT_MARGIN = rf"({_DECORATOR}|def[ \t]|async[ \t]|class[ \t]|import[ \t]|from[ \t]|#|[)\]}}])[^\n]*\n"
_IMPORT = r"(import|from)[ \t][^\n]*\n"
_COMMENT_OR_BLANK = r"[ \t]*(#[^\n]*)?\n"
# the first definition: its decorators, then `def name` / `async def name` / `class Name`
_HEAD = rf"[ \t]*({_DECORATOR}[^\n]*\n[ \t]*)*(async[ \t]+)?(def|class)[ \t]+[A-Za-z_][A-Za-z0-9_]*[^\n]*\n"
_BODY_LINE = rf"([ \t]+[^\n]*\n|\n|{_AT_MARGIN})"
# blocks in a reply at most: a fence holds any number of definitions, so more blocks than this are a model
# writing the same block again and again (the 1.5B did, to max_tokens); at the cap the reply ends
MAX_BLOCKS = 8
# lines of imports, comments or blanks before the first definition, at most: a model cannot wander there
PREAMBLE_LINES = 12
# how a reply closes: end after a fence, or close the fence at a line's start or end
SYMBOL_CLOSERS = ("", "```", "\n```")
FENCE_OPEN = "```python\n"
DEFINITIONS = rf"({_IMPORT}|{_COMMENT_OR_BLANK}){{0,{PREAMBLE_LINES}}}{_HEAD}{_BODY_LINE}*"


def python_files(paths) -> list[str]:
    """The paths a symbol reply may name: the Python ones."""
    return sorted(p for p in paths if p.endswith(".py"))


def closes_as_python(reply: str) -> bool:
    """Whether the reply's open fence, closed after its last whole line, holds code that parses (an indented
    method dedented, as the symbol format reads it): near its budget a reply closes there rather than mid
    statement, where the format would refuse the block."""
    start = reply.rfind(FENCE_OPEN)
    if start < 0:
        return False
    code = reply[start + len(FENCE_OPEN):]
    code = code[: code.rfind("\n") + 1]
    if "```" in code or not code.strip():
        return False
    try:
        ast.parse(textwrap.dedent(code))
    except (SyntaxError, ValueError):
        return False
    return True


def symbol_grammar(paths: list[str]) -> str:
    """The grammar of a symbol reply editing these Python files."""
    if not paths:
        raise ValueError("a symbol constraint needs a Python file to edit")
    names = " | ".join(json.dumps(p) for p in paths)  # a JSON string is a Lark string literal
    return "\n".join([
        # the reply may end right after a fence, as a model ends one (a newline forced there sends it on
        # into another block)
        f'start: block ("\\n" "\\n"? block){{0,{MAX_BLOCKS - 1}}} "\\n"?',
        'block: PATH "\\n```python\\n" DEFINITIONS "```"',
        f"PATH: {names}",
        f"DEFINITIONS: /{DEFINITIONS}/",
    ])
