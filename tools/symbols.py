"""Splice new versions of Python functions and classes into a module, located by name with `ast`.

A model that rewrites one function in full needs to copy nothing exactly: each top-level `def`/`class` of
the new code replaces the definition of the same qualified name (`name`, or `Class.method` for a method,
found by its name when it is the only one so called) over its line span, decorators included; the
replacement is re-indented to where the old one stood, and keeps the old decorators when it brings none.
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
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
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
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    body = textwrap.dedent("\n".join(new_lines[first - 1 : node.end_lineno])).split("\n")
    if not node.decorator_list:
        body = keep_decorators + body
    return [indent + line if line.strip() else "" for line in body]


def _missing_imports(new_tree: ast.Module, new_lines: list[str], source_lines: list[str]) -> list[str]:
    present = {line.strip() for line in source_lines}
    imports = [n for n in new_tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    text = ["\n".join(new_lines[n.lineno - 1 : n.end_lineno]) for n in imports]
    return [t for t in text if t.strip() not in present]


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
                new_lines[min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
                          : node.end_lineno])).split("\n")]
            continue
        span = _span(known[target], lines)
        old_decorators = [line.strip() and line[len(span.indent):] for line in lines[span.start
                          : known[target].lineno - 1]]
        replaced.append((span, _new_text(node, new_lines, old_decorators, span.indent)))
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
