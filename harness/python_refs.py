"""What a Python file points at, for choosing context: the workspace modules it imports (with the names it
takes from each), and the names its failing test functions call."""

from __future__ import annotations

import ast
from pathlib import PurePosixPath

from deltaserve.tools.symbols import parse_python

# where a top-level package may live in a workspace: its root, or a src/ layout
PACKAGE_ROOTS = ("", "src/")


def _module_file(workspace, dotted: str) -> str | None:
    base = dotted.replace(".", "/")
    for root in PACKAGE_ROOTS:
        for candidate in (f"{root}{base}.py", f"{root}{base}/__init__.py"):
            if workspace.exists(candidate):
                return workspace.relpath(candidate)
    return None


def _absolute(path: str, node: ast.ImportFrom) -> str | None:
    """The dotted module an ImportFrom names, relative imports resolved against `path`'s package."""
    if not node.level:
        return node.module
    package = PurePosixPath(path).parent.parts
    if node.level - 1 > len(package):
        return None
    parts = list(package[: len(package) - (node.level - 1)])
    return ".".join([*parts, *(node.module.split(".") if node.module else [])]) or None


def imported_modules(workspace, path: str, text: str) -> dict[str, set[str]]:
    """Workspace file -> the names `path` imports from it (empty for `import pkg.mod`), in import order.
    `from pkg import name` where name is a submodule counts as importing that submodule."""
    tree = parse_python(text)
    found: dict[str, set[str]] = {}
    for node in (tree.body if tree else []):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _module_file(workspace, alias.name)
                if target:
                    found.setdefault(target, set())
        elif isinstance(node, ast.ImportFrom):
            dotted = _absolute(path, node)
            target = _module_file(workspace, dotted) if dotted else None
            for alias in node.names:
                submodule = _module_file(workspace, f"{dotted}.{alias.name}") if dotted else None
                if submodule:
                    found.setdefault(submodule, set())
                elif target:
                    found.setdefault(target, set()).add(alias.name)
    found.pop(workspace.relpath(path) if workspace.exists(path) else path, None)
    return found


def names_used_on(text: str, lines: set[int]) -> set[str] | None:
    """The names the code on these lines reads (calls, values, bases; not type hints, comments or strings),
    None when the file does not parse. A name used only as a type hint says nothing about where a wrong
    value comes from (excerpt.py ranks them the same way)."""
    tree = parse_python(text)
    if tree is None:
        return None
    hints = type_hint_ids(tree)
    return {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.lineno in lines
            and id(node) not in hints}


def type_hint_ids(node: ast.AST) -> set[int]:
    """The ids of every node inside a type hint under `node`: argument and variable annotations, return
    types."""
    hints: list[ast.AST] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.arg | ast.AnnAssign) and sub.annotation is not None:
            hints.append(sub.annotation)
        elif isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef) and sub.returns is not None:
            hints.append(sub.returns)
    return {id(n) for hint in hints for n in ast.walk(hint)}


def defines_code(text: str) -> bool:
    """Whether a module defines anything (a function, class or variable besides `__all__`); a package's
    `__init__` that only re-exports does not, and showing it would only point the model at the wrong file."""
    tree = parse_python(text)
    for node in (tree.body if tree else []):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(not (isinstance(t, ast.Name) and t.id == "__all__") for t in targets):
                return True
    return False


def called_by(text: str, functions: set[str]) -> list[str]:
    """The names the named functions (test functions, methods of test classes) call, in order."""
    tree = parse_python(text)
    calls: list[str] = []
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in functions:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Call):
                    func = sub.func
                    name = func.id if isinstance(func, ast.Name) else \
                        func.attr if isinstance(func, ast.Attribute) else None
                    if name:
                        calls.append(name)
    return list(dict.fromkeys(calls))
