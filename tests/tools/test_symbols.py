"""tools.symbols: new definitions spliced in by qualified name."""

from __future__ import annotations

import ast

import pytest

from deltaserve.errors import PatchError
from deltaserve.tools.symbols import replace_symbols

MODULE = '''"""Shapes."""
import math


def area(r):
    return math.pi * r * r


class Stack:
    def __init__(self):
        self.items = []

    @property
    def top(self):
        return self.items[0]

    def push(self, x):
        self.items.insert(0, x)
'''


def test_a_function_is_replaced_over_its_span_and_the_rest_kept():
    out = replace_symbols(MODULE, "def area(r):\n    return math.pi * r ** 2\n")
    assert "return math.pi * r ** 2" in out and "r * r" not in out
    assert out.replace("r ** 2", "r * r") == MODULE


def test_a_method_written_alone_keeps_its_class_indentation_and_decorator():
    out = replace_symbols(MODULE, "def top(self):\n    return self.items[-1]\n")
    assert "    @property\n    def top(self):\n        return self.items[-1]\n" in out
    assert out.count("@property") == 1
    ast.parse(out)


def test_new_imports_go_after_the_imports_and_new_functions_at_the_end():
    out = replace_symbols(MODULE, "import functools\n\n\ndef perimeter(r):\n    return 2 * math.pi * r\n")
    assert out.index("import functools") < out.index("def area")
    assert out.rstrip().endswith("return 2 * math.pi * r")


def test_a_whole_class_replaces_the_class():
    new = ("class Stack:\n    def __init__(self):\n        self.items = [None]\n\n    @property\n"
           "    def top(self):\n        return self.items[0]\n\n    def push(self, x):\n        pass\n")
    out = replace_symbols(MODULE, new)
    assert "[None]" in out and "insert" not in out and out.count("def push") == 1


def test_a_class_written_with_some_of_its_methods_edits_only_those():
    new = ("class Stack:\n    LIMIT = 10\n\n    def push(self, x):\n        self.items.append(x)\n\n"
           "    def pop(self):\n        return self.items.pop()\n")
    out = replace_symbols(MODULE, new)
    tree = ast.parse(out)
    stack = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    assert [type(n).__name__ for n in stack.body] == ["Assign", "FunctionDef", "FunctionDef", "FunctionDef",
                                                     "FunctionDef"]
    assert [n.name for n in stack.body[1:]] == ["__init__", "top", "push", "pop"]  # nothing left out is lost
    assert "self.items.append(x)" in out and "insert" not in out and out.count("@property") == 1


@pytest.mark.parametrize("code", ["def area(r):\n  return (\n", "x = 1\n"])
def test_invalid_or_definitionless_code_is_refused(code):
    with pytest.raises(PatchError):
        replace_symbols(MODULE, code, "shapes.py")


def test_an_ambiguous_method_name_is_refused_with_what_to_do():
    source = "class A:\n    def f(self):\n        pass\n\n\nclass B:\n    def f(self):\n        pass\n"
    with pytest.raises(PatchError, match="whole class"):
        replace_symbols(source, "def f(self):\n    return 1\n", "m.py")
