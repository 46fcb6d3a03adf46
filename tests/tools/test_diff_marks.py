"""Whole-function code written with diff marks is read as the code after the change, and only when that
is what makes it Python."""

from __future__ import annotations

import ast

from deltaserve.tools.diff_marks import without_diff_marks

MARKED = ("def split(value):\n    out = []\n    for ch in value:\n-        if ch == ',':\n"
          "+        if ch in ',;':\n            out.append(ch)\n+\n    return out\n")
AFTER = ("def split(value):\n    out = []\n    for ch in value:\n        if ch in ',;':\n"
         "            out.append(ch)\n\n    return out\n")


def test_marked_lines_are_read_as_the_new_code():
    assert without_diff_marks(MARKED) == AFTER


def test_context_lines_with_a_unified_diff_space_lose_it_too():
    lines = MARKED.split("\n")
    as_in_a_diff = "\n".join(line if line[:1] in "+-" or not line else " " + line for line in lines)
    assert without_diff_marks(as_in_a_diff) == AFTER


def test_code_that_parses_or_cannot_be_read_either_way_is_left_as_it_is():
    unary = "def f(x):\n    return (x\n-1)\n"  # parses: a continuation line that starts with a minus
    assert ast.parse(unary) and without_diff_marks(unary) == unary
    broken = "def f(x):\n+    return x +\n"
    assert without_diff_marks(broken) == broken
