"""Splice new versions of Python functions and classes into a module, located by name with `ast`.

A model that rewrites one function in full needs to copy nothing exactly: each top-level `def`/`class` of
the new code replaces the definition of the same qualified name (`name`, or `Class.method` for a method,
found by its name when it is the only one so called) over its line span, decorators included; the
replacement is re-indented to where the old one stood, and keeps the old decorators when it brings none.
A class written with only some of the methods it has (a model shown part of a file writes the class line
and the method it fixes) edits those members: each method replaces its namesake or is added at the class's
end, new class-level statements replace the old ones above the first method, and the methods it leaves out
stay (removing a method is a SEARCH/REPLACE edit).
Imports in the new code that the module lacks are added after its last top-level import; definitions the
module does not have yet are appended at its end. The result must parse, or nothing is returned.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from deltaserve.errors import PatchError

_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class _Span:
    start: int  # 0-based first line (its first decorator's)
    end: int  # 0-based, exclusive
    indent: str
    decorated: bool


def _span(node: ast.AST, lines: list[str]) -> _Span:
    first = first_line(node)
    line = lines[first - 1]
    return _Span(first - 1, node.end_lineno, line[: len(line) - len(line.lstrip())],
                 bool(node.decorator_list))


def definitions(tree: ast.Module) -> dict[str, ast.AST]:
    """Qualified name -> node, for top-level functions and classes and the methods of those classes."""
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, _DEFINITION):
            found[node.name] = node
            if isinstance(node, ast.ClassDef):
                found.update({f"{node.name}.{child.name}": child for child in node.body
                              if isinstance(child, _DEFINITION)})
    return found


def _parse(source: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise PatchError(f"{what} is not valid Python: line {exc.lineno}: {exc.msg}") from exc


def _locate(name: str, known: dict[str, ast.AST], path: str) -> str | None:
    """The qualified name a new top-level definition `name` replaces: itself, else the one method so named."""
    if name in known:
        return name
    methods = [q for q in known if q.endswith(f".{name}")]
    if len(methods) > 1:
        raise PatchError(f"{path} has several methods named {name!r} ({', '.join(methods)}); write the whole "
                         f"class that holds the one you change.", path)
    return methods[0] if methods else None


def _new_text(node: ast.AST, new_lines: list[str], keep_decorators: list[str], indent: str) -> list[str]:
    first = first_line(node)
    body = textwrap.dedent("\n".join(new_lines[first - 1 : node.end_lineno])).split("\n")
    if not node.decorator_list:
        body = keep_decorators + body
    return [indent + line if line.strip() else "" for line in body]


def _missing_imports(new_tree: ast.Module, new_lines: list[str], source_lines: list[str]) -> list[str]:
    present = {line.strip() for line in source_lines}
    imports = [n for n in new_tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    text = ["\n".join(new_lines[n.lineno - 1 : n.end_lineno]) for n in imports]
    return [t for t in text if t.strip() not in present]


def _replacement(node: ast.AST, old: ast.AST, new_lines: list[str],
                 lines: list[str]) -> tuple[_Span, list[str]]:
    """The old definition's span and the new one's text for it, re-indented, keeping old decorators."""
    span = _span(old, lines)
    old_decorators = [line.strip() and line[len(span.indent):] for line in lines[span.start : old.lineno - 1]]
    return span, _new_text(node, new_lines, old_decorators, span.indent)


def _methods(node: ast.ClassDef) -> list[ast.AST]:
    return [child for child in node.body if isinstance(child, _DEFINITION)]


def _leaves_out_methods(new: ast.ClassDef, old: ast.ClassDef) -> bool:
    return bool({m.name for m in _methods(old)} - {m.name for m in _methods(new)})


def _member_edits(new: ast.ClassDef, old: ast.ClassDef, new_lines: list[str],
                  lines: list[str]) -> list[tuple[_Span, list[str]]]:
    """A partial class's edits of the old class: its methods by name, its class-level statements (those
    above its first method, when it has any besides a docstring) over the old ones."""
    old_methods = {m.name: m for m in _methods(old)}
    body_line = lines[old.body[0].lineno - 1]
    member_indent = body_line[: len(body_line) - len(body_line.lstrip())]
    edits = []
    for method in _methods(new):
        if method.name in old_methods:
            edits.append(_replacement(method, old_methods[method.name], new_lines, lines))
        else:  # a new method: after the class's last line
            edits.append((_Span(old.end_lineno, old.end_lineno, member_indent, False),
                          ["", *_new_text(method, new_lines, [], member_indent)]))
    statements = [c for c in new.body if not isinstance(c, _DEFINITION)]
    if statements and not (len(statements) == 1 and _is_docstring(statements[0])):
        first_new = min((first_line(m) for m in _methods(new)), default=new.end_lineno + 1)
        first_old = min((first_line(m) for m in _methods(old)), default=old.end_lineno + 1)
        header = textwrap.dedent("\n".join(new_lines[new.body[0].lineno - 1 : first_new - 1])).rstrip()
        # the old docstring stays unless the new statements bring their own
        keep_doc = _is_docstring(old.body[0]) and not _is_docstring(new.body[0])
        start = old.body[0].end_lineno if keep_doc else old.body[0].lineno - 1
        text = [member_indent + line if line.strip() else "" for line in header.split("\n")]
        edits.append((_Span(start, first_old - 1, member_indent, False), [""] * keep_doc + text + [""]))
    return edits


def first_line(node: ast.AST) -> int:
    """A definition's first line: its first decorator's (a statement without decorators: its own)."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def _is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def replace_symbols(source: str, new_code: str, path: str = "<file>") -> str:
    """`source` with every definition in `new_code` put in place (see the module docstring)."""
    new_tree = _parse(new_code, f"The code for {path}")
    new_lines = new_code.split("\n")
    tree = _parse(source, path)
    lines = source.split("\n")
    known = definitions(tree)
    replaced: list[tuple[_Span, list[str]]] = []
    appended: list[str] = []
    for node in new_tree.body:
        if not isinstance(node, _DEFINITION):
            continue
        target = _locate(node.name, known, path)
        if target is None:
            appended += ["", "", *textwrap.dedent("\n".join(
                new_lines[first_line(node) - 1
                          : node.end_lineno])).split("\n")]
            continue
        if isinstance(node, ast.ClassDef) and isinstance(known[target], ast.ClassDef) \
                and _leaves_out_methods(node, known[target]):
            replaced += _member_edits(node, known[target], new_lines, lines)
            continue
        replaced.append(_replacement(node, known[target], new_lines, lines))
    if not replaced and not appended:
        raise PatchError(f"The code for {path} defines no function or class; write the complete new version "
                         "of each function or class you change.", path)
    for span, text in sorted(replaced, key=lambda r: r[0].start, reverse=True):
        lines[span.start : span.end] = text
    result = _with_imports(lines, _missing_imports(new_tree, new_lines, lines), tree)
    if appended:
        result = result.rstrip("\n") + "\n".join(appended) + "\n"
    _parse(result, f"{path} after the edit")
    return result


def _with_imports(lines: list[str], imports: list[str], tree: ast.Module) -> str:
    """`lines` with `imports` after the module's last import above its first definition (line numbers there
    still hold: only definitions moved), else after its docstring."""
    if imports:
        first_def = min((n.lineno for n in tree.body if isinstance(n, _DEFINITION)), default=len(lines) + 1)
        tops = [n.end_lineno for n in tree.body
                if isinstance(n, ast.Import | ast.ImportFrom) and n.lineno < first_def]
        docstring = (tree.body[0].end_lineno if tree.body and isinstance(tree.body[0], ast.Expr)
                     and isinstance(tree.body[0].value, ast.Constant) else 0)
        at = max(tops) if tops else docstring
        lines[at:at] = imports
    return "\n".join(lines)
