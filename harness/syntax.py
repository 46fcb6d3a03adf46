"""Whether an edit leaves a file it could parse before unparseable: Python (ast), JSON and TOML, each with
the error's line, so the model can be told which line no longer parses. A file that was already broken may
stay broken on the way to its fix (a JSON file with comments, say); other languages are not checked."""

from __future__ import annotations

import ast
import codeop
import json
import re
from collections.abc import Callable

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: TOML files are not checked
    tomllib = None

_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")


def _python(text: str) -> SyntaxError | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:  # IndentationError and TabError are SyntaxErrors
        return exc
    except ValueError:  # null bytes: not something to parse
        return None
    return None


# Python 3.11+: compile() tells input that could still go on ("incomplete input") from input that cannot
_SO_FAR = getattr(codeop, "PyCF_ALLOW_INCOMPLETE_INPUT", 0)
_SO_FAR_FLAGS = ast.PyCF_ONLY_AST | _SO_FAR | getattr(codeop, "PyCF_DONT_IMPLY_DEDENT", 0)


def python_error_so_far(code: str, complete: bool = False) -> SyntaxError | None:
    """The error in Python code cut after a whole line that no further line can repair (`not: int = 0`, an
    unindent to no outer level), or None while more lines could make it parse (an open bracket, string or
    block). Always None on Python 3.10, whose compile() cannot tell the two apart. `complete`: no more
    lines come, so any error counts."""
    if not (_SO_FAR or complete):
        return None
    try:
        compile(code, "<reply>", "exec", ast.PyCF_ONLY_AST if complete else _SO_FAR_FLAGS, dont_inherit=True)
    except SyntaxError as exc:  # 3.13 raises incomplete input as a SyntaxError subclass of its own
        return None if exc.msg == "incomplete input" else exc
    except ValueError:  # a null byte: never Python
        return SyntaxError("source code cannot contain null bytes")
    return None


def _at(message: str, text: str, line: int | None, column: int | None) -> SyntaxError:
    lines = text.splitlines()
    shown = lines[line - 1] if line and 0 < line <= len(lines) else None
    return SyntaxError(message, ("<edit>", line, column, shown))


def _json(text: str) -> SyntaxError | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return _at(exc.msg, text, exc.lineno, exc.colno)
    return None


def _toml(text: str) -> SyntaxError | None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        where = _TOML_AT.search(str(exc))
        line, column = (int(where.group(1)), int(where.group(2))) if where else (None, None)
        return _at(_TOML_AT.sub("", str(exc)), text, line, column)
    return None


# extension -> (the language's name, its parser: the error, or None when the text parses)
LANGUAGES: dict[str, tuple[str, Callable[[str], SyntaxError | None]]] = {
    ".py": ("Python", _python), ".pyi": ("Python", _python), ".json": ("JSON", _json),
    **({".toml": ("TOML", _toml)} if tomllib is not None else {}),
}


def _checked(path: str) -> tuple[str, Callable[[str], SyntaxError | None]] | None:
    name = path.rsplit("/", 1)[-1]
    return LANGUAGES.get("." + name.rsplit(".", 1)[-1]) if "." in name else None


def language(path: str) -> str | None:
    """The name of the language `path` is checked as, or None."""
    found = _checked(path)
    return found[0] if found else None


def new_syntax_error(path: str, old: str | None, new: str | None) -> SyntaxError | None:
    """The error that makes `new` unparseable, if `path` is in a checked language and its `old` text parsed
    (or it did not exist)."""
    found = _checked(path)
    if new is None or found is None:
        return None
    parse = found[1]
    if old is not None and parse(old) is not None:
        return None
    return parse(new)
