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


# Where a definition the module lacks goes: where the reply puts it among the ones the module has (new
# helpers and decorators are written next to the code that uses them; at the end, a decorator used above it
# would fail at import). Seen replaying real commits as symbol replies (`deltaserve bench replay`).
def test_a_new_function_written_before_an_existing_one_goes_above_it_and_its_comment():
    source = ("import os\n\n\n# the area of a disc\ndef area(r):\n    return r\n\n\n"
              "def volume(r):\n    return r\n")
    new = "def cached(fn):\n    return fn\n\n\n@cached\ndef area(r):\n    return 3 * r * r\n"
    out = replace_symbols(source, new)
    assert out == ("import os\n\n\ndef cached(fn):\n    return fn\n\n\n# the area of a disc\n@cached\n"
                   "def area(r):\n    return 3 * r * r\n\n\ndef volume(r):\n    return r\n")


def test_new_functions_written_after_an_existing_one_follow_it_in_order():
    out = replace_symbols(MODULE, "def area(r):\n    return _sq(r) * math.pi\n\n\ndef _sq(x):\n"
                                  "    return x * x\n\n\ndef _cube(x):\n    return x ** 3\n")
    assert "return _sq(r) * math.pi\n\n\ndef _sq(x):\n    return x * x\n\n\ndef _cube(x):\n" \
           "    return x ** 3\n\n\nclass Stack:" in out


def test_a_new_function_with_no_neighbour_in_the_reply_is_appended_two_lines_below():
    out = replace_symbols("x = 1\n", "def f():\n    return x\n")
    assert out == "x = 1\n\n\ndef f():\n    return x\n"


def test_a_new_method_follows_the_method_written_before_it():
    new = "class Stack:\n    def top(self):\n        return self.items[-1]\n\n    def peek(self):\n" \
          "        return self.top\n"
    out = replace_symbols(MODULE, new)
    stack = next(n for n in ast.parse(out).body if isinstance(n, ast.ClassDef))
    assert [n.name for n in stack.body] == ["__init__", "top", "peek", "push"]
    assert "        return self.items[-1]\n\n    def peek(self):\n" in out


def test_a_class_written_with_its_only_method_keeps_its_class_level_statements():
    source = "class Value(Node):\n    __slots__ = ()\n\n    def serialize(self):\n        return str(self)\n"
    out = replace_symbols(source, "class Value(Node):\n    def serialize(self):\n        return repr(self)\n")
    assert out == source.replace("str(self)", "repr(self)")


PROPERTY = ("class A:\n    @property\n    def x(self):\n        return self._x\n\n    @x.setter\n"
            "    def x(self, v):\n        self._x = v\n")


@pytest.mark.parametrize("reply", [
    "@property\ndef x(self):\n    return self._x + 1\n",  # the getter written alone
    # in its class, the setter left out
    "class A:\n    @property\n    def x(self):\n        return self._x + 1\n",
])
def test_a_property_getter_replaces_the_getter_and_the_setter_stays(reply):
    assert replace_symbols(PROPERTY, reply) == PROPERTY.replace("return self._x\n", "return self._x + 1\n")


def test_overloads_written_with_their_function_replace_them_all_in_order():
    source = ("@overload\ndef f(x: int) -> int: ...\n\n\n@overload\ndef f(x: str) -> str: ...\n\n\n"
              "def f(x):\n    return x\n\n\ndef g():\n    pass\n")
    new = source.split("\n\n\ndef g")[0].replace("return x", "return x * 2")
    assert replace_symbols(source, new) == source.replace("return x", "return x * 2")
    # the implementation alone (no decorators) replaces the implementation only
    assert replace_symbols(source, "def f(x):\n    return -x\n") == source.replace("return x", "return -x")


def test_one_of_several_same_named_definitions_without_telling_which_is_refused():
    source = "@overload\ndef f(x: int) -> int: ...\n\n\n@overload\ndef f(x: str) -> str: ...\n\n\n" \
             "def f(x):\n    return x\n"
    with pytest.raises(PatchError, match="defines 'f' 3 times"):
        replace_symbols(source, "@overload\ndef f(x: bytes) -> bytes: ...\n")


def test_a_new_method_and_a_new_class_after_its_class_each_go_where_written():
    new = "class Stack:\n    def size(self):\n        return len(self.items)\n\n\nclass Queue:\n    pass\n"
    out = replace_symbols(MODULE, new)
    assert out.endswith("        self.items.insert(0, x)\n\n    def size(self):\n"
                        "        return len(self.items)\n\n\nclass Queue:\n    pass\n")


def test_a_class_written_without_its_docstring_keeps_it():
    source = 'class A:\n    """What A is."""\n\n    def f(self):\n        return 1\n'
    out = replace_symbols(source, "class A:\n    def f(self):\n        return 2\n")
    assert out == source.replace("return 1", "return 2")


def test_a_class_defining_plainly_what_it_defined_under_an_if_replaces_the_if():
    """The `if sys.version_info` block is what the new method replaces, not a statement the model left out
    (a replayed tornado commit kept it: the method was defined twice)."""
    source = ("class Executor:\n    def submit(self, fn):\n        return fn()\n\n"
              "    if sys.version_info >= (3, 9):\n\n        def shutdown(self, wait=True, cancel=False):\n"
              "            pass\n\n    else:\n\n"
              "        def shutdown(self, wait=True):\n            pass\n")
    new = ("class Executor:\n    def submit(self, fn):\n        return fn()\n\n"
           "    def shutdown(self, wait=True, cancel=False):\n        pass\n")
    assert replace_symbols(source, new) == new
    # a statement defining nothing the class defines is still kept
    slots = source.replace("class Executor:\n", "class Executor:\n    __slots__ = ()\n\n")
    assert "__slots__ = ()" in replace_symbols(slots, new)


TRACEBACK_TEST = ('class TestDebug:\n    def test_error(self):\n        check(\n            r"""\n'
                  '  File ".*", line 2\n    \\^{12}\nZeroDivisionError\n""",\n        )\n\n'
                  '    def test_other(self):\n        pass\n')


def test_a_strings_lines_are_no_indentation_and_stay_as_written():
    """A raw string's lines at the margin set no common indentation for the method around them (a replayed
    jinja commit shifted its method and the string's content 4 columns right)."""
    new = TRACEBACK_TEST.split("\n\n    def test_other")[0].replace("line 2", "line 3") + "\n"
    assert replace_symbols(TRACEBACK_TEST, new) == TRACEBACK_TEST.replace("line 2", "line 3")


def test_a_method_written_alone_moves_its_docstring_but_not_a_strings_content():
    source = "class A:\n    def f(self):\n        pass\n"
    new = 'def f(self):\n    """Doc.\n\n    More.\n    """\n    return """\nraw\n"""\n'
    assert replace_symbols(source, new) == ('class A:\n    def f(self):\n        """Doc.\n\n        More.\n'
                                            '        """\n        return """\nraw\n"""\n')


def test_replace_definitions_edits_a_file_all_or_nothing(workspace):
    from deltaserve.tools.patch import replace_definitions

    ws = workspace({"shapes.py": MODULE.replace("\n", "\r\n"), "notes.txt": "area\n"})
    dry = replace_definitions(ws, "shapes.py", "def push(self, x):\n    self.items.append(x)\n", dry_run=True)
    assert dry.files_changed == ["shapes.py"] and (ws.root / "shapes.py").read_bytes().count(b"insert(0") == 1
    replace_definitions(ws, "shapes.py", "def push(self, x):\n    self.items.append(x)\n")
    after = (ws.root / "shapes.py").read_bytes()
    assert b"        self.items.append(x)\r\n" in after and b"insert(0" not in after  # its newlines kept
    replace_definitions(ws, "pkg/new.py", "def f():\n    return 1\n")
    assert (ws.root / "pkg" / "new.py").read_text() == "def f():\n    return 1\n"
    for path, code, said in [("notes.txt", "def f(): pass\n", "not a Python file"),
                             ("shapes.py", "def area(r:\n", "not valid Python"),
                             ("other.py", "X = 1\n", "defines no function or class")]:
        with pytest.raises(PatchError, match=said):
            replace_definitions(ws, path, code)
    assert (ws.root / "shapes.py").read_bytes() == after and not (ws.root / "other.py").exists()
