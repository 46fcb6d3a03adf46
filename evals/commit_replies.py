"""A real change (a file's text before and after a commit) written as the reply a model would give in each
edit format, for `deltaserve bench replay` (evals/bench/replay_commits.py).

- udiff: git's own diff, as `git diff` prints it.
- udiff-loose: that diff the way models write it: no `index`/mode lines, no a/ b/ prefixes on the ---/+++
  lines, and `@@ ... @@` hunk headers without line numbers, so every hunk is placed by its text alone.
- search_replace: one SEARCH/REPLACE block per change, with two lines of context (what aider asks for).
- symbol: the complete new version of each top-level function or class that changed; a class whose own
  statements did not change is written with only its changed methods (the partial form the format allows).
  None where the format cannot say the change: statements outside definitions changed, a definition
  was removed, one lost all its decorators, or a class lost its docstring or all its own statements.
"""

from __future__ import annotations

import ast
import difflib

from deltaserve.tools.symbols import first_line, is_docstring, left_out_statements

DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
SEARCH_REPLACE_CONTEXT = 2
GIT_HEADERS = ("index ", "similarity index", "old mode", "new mode", "new file mode",
               "deleted file mode")


def udiff_reply(diff: str) -> str:
    return f"```diff\n{diff}```\n"


def loose_udiff_reply(diff: str) -> str:
    """Git's extended headers are dropped, except for a file with no hunks (an empty file added or deleted:
    without `new file mode` nothing would say what happens to it)."""
    out = []
    lines = diff.removesuffix("\n").split("\n")  # not splitlines: a line's CR or form feed is its text
    keep_header = False
    for i, line in enumerate(lines):
        if line.startswith("diff --git "):
            rest = next((x for x in lines[i + 1 :] if x.startswith(("diff --git ", "--- "))), "")
            keep_header = not rest.startswith("--- ")
        if line.startswith(GIT_HEADERS) and not keep_header:
            continue
        if line.startswith(("--- a/", "+++ b/")):
            line = line[:4] + line[6:]
        elif line.startswith("@@"):
            line = "@@ ... @@"
        out.append(line)
    return "```diff\n" + "\n".join(out) + "\n```\n"


def search_replace_reply(path: str, old: str, new: str) -> str:
    """One block per group of changed lines, SEARCH_REPLACE_CONTEXT unchanged lines around it."""
    a, b = old.splitlines(), new.splitlines()
    blocks = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(SEARCH_REPLACE_CONTEXT):
        search = "\n".join(a[group[0][1] : group[-1][2]])
        replace = "\n".join(b[group[0][3] : group[-1][4]])
        blocks.append(f"{path}\n```\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n```\n")
    return "\n".join(blocks)


def _text(lines: list[str], node: ast.AST) -> str:
    return "\n".join(lines[first_line(node) - 1 : node.end_lineno])


def _named(body: list[ast.AST], name: str) -> list[ast.AST]:
    return [n for n in body if isinstance(n, DEFINITION) and n.name == name]


def _names(body: list[ast.AST]) -> list[str]:
    return list(dict.fromkeys(n.name for n in body if isinstance(n, DEFINITION)))


def _group_text(body: list[ast.AST], lines: list[str], name: str) -> str:
    """Every definition of `name` in `body` (overloads, a property's getter and setter), as one text."""
    return "\n\n".join(_text(lines, n) for n in _named(body, name))


def _outside(body: list[ast.AST], lines: list[str], start: int, end: int) -> list[str]:
    """The non-blank lines start..end (1-based, inclusive) that no definition in `body` covers."""
    covered = {i for n in body if isinstance(n, DEFINITION) for i in range(first_line(n), n.end_lineno + 1)}
    return [lines[i - 1] for i in range(start, end + 1) if i not in covered and lines[i - 1].strip()]


def _class_reply(old: ast.ClassDef, new: ast.ClassDef, a: list[str], b: list[str]) -> str:
    """The class with only its changed methods, or all of it when its own statements changed."""
    same_statements = (_outside(old.body, a, first_line(old), old.end_lineno)
                       == _outside(new.body, b, first_line(new), new.end_lineno))
    if not same_statements or [n for n in _names(new.body) if n in _names(old.body)] != _names(old.body):
        return _text(b, new)
    changed = [name for name in _names(new.body)
               if _group_text(old.body, a, name) != _group_text(new.body, b, name)]
    if not changed:
        return _text(b, new)  # what changed is whitespace outside its methods (in its docstring, say)
    header = b[first_line(new) - 1 : min(first_line(n) for n in new.body) - 1]
    methods = [_text(b, n) for n in new.body if isinstance(n, DEFINITION) and n.name in changed]
    return "\n".join(header) + "\n" + "\n\n".join(methods)


def _decorators_dropped(old_body: list[ast.AST], new_body: list[ast.AST]) -> bool:
    """A function, class or method that lost all its decorators: the format keeps a definition's decorators
    when its new version brings none (a model often leaves them out), so it cannot say that change."""
    for name in _names(new_body):
        olds, news = _named(old_body, name), _named(new_body, name)
        if len(olds) != 1 or len(news) != 1:
            continue
        if olds[0].decorator_list and not news[0].decorator_list:
            return True
        if isinstance(olds[0], ast.ClassDef) and isinstance(news[0], ast.ClassDef) \
                and _decorators_dropped(olds[0].body, news[0].body):
            return True
    return False


def symbol_reply(path: str, old: str, new: str) -> str | None:
    try:
        old_tree, new_tree = ast.parse(old), ast.parse(new)
    except SyntaxError:
        return None
    if _decorators_dropped(old_tree.body, new_tree.body):
        return None
    a, b = old.split("\n"), new.split("\n")
    if _outside(old_tree.body, a, 1, len(a)) != _outside(new_tree.body, b, 1, len(b)):
        return None
    if set(_names(old_tree.body)) - set(_names(new_tree.body)):
        return None
    blocks = []
    for name in _names(new_tree.body):
        if _group_text(old_tree.body, a, name) == _group_text(new_tree.body, b, name):
            continue
        olds, news = _named(old_tree.body, name), _named(new_tree.body, name)
        if len(olds) == len(news) == 1 and all(isinstance(n, ast.ClassDef) for n in (*olds, *news)):
            if set(_names(olds[0].body)) - set(_names(news[0].body)):
                return None  # a method removed: a SEARCH/REPLACE edit, not this format
            if left_out_statements(news[0], olds[0]) or (is_docstring(olds[0].body[0])
                                                         and not is_docstring(news[0].body[0])):
                return None  # its own statements or docstring removed: the format keeps what it leaves out
            blocks.append(_class_reply(olds[0], news[0], a, b))
        else:
            blocks.append(_group_text(new_tree.body, b, name))
    if not blocks:
        return None
    return f"{path}\n```python\n" + "\n\n\n".join(blocks) + "\n```\n"

