"""Where to look when a reply changed nothing: the code the failing test runs, named for the model.

A model that re-types a function unchanged believes that function is right; often the fault is in code it
calls, or at the line where the traceback stops. After a no-op edit the agent names (1) the frames of the
latest failing test run that lie in the workspace's non-test files, and (2) for the Python files the reply
touched, the functions the failure names (traceback frames, pytest's `where` lines, the task) and the
definitions of that file they call, which the model may not have suspected.
"""

from __future__ import annotations

import ast
import re

from deltaserve.harness import context
from deltaserve.tools.symbols import definitions
from deltaserve.tools.tests import is_test_path

# `File "/abs/pkg/mod.py", line 12, in f` (Python); `pkg/mod.py:12: in f` and, for the innermost frame,
# `pkg/mod.py:12: ZeroDivisionError` (pytest)
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\w+)|^([\w./\\-]+\.py):(\d+): (?:in (\w+))?',
                    re.MULTILINE)
MAX_SITES = 4
MAX_CALLEES = 6


def traceback_sites(workspace, test_output: str) -> list[str]:
    """`path:line (in name)` (the name where the output has it) for the output's frames in non-test
    workspace files, innermost last."""
    sites = []
    for m in _FRAME.finditer(test_output):
        name, line, func = (m.group(1), m.group(2), m.group(3)) if m.group(1) else m.group(4, 5, 6)
        path = context.workspace_path(workspace, name)
        if path and not is_test_path(path):
            sites.append(f"{path}:{line} (in {func})" if func else f"{path}:{line}")
    return list(dict.fromkeys(sites))[-MAX_SITES:]


def called_definitions(source: str, names: list[str]) -> tuple[list[str], list[str]]:
    """(the definitions of `source` named in `names`, the other definitions of `source` they call outside
    `raise` statements)."""
    try:
        known = definitions(ast.parse(source))
    except SyntaxError:
        return [], []
    by_name = {q.rsplit(".", 1)[-1]: q for q in known}
    targets = [by_name[n] for n in names if n in by_name]
    called: list[str] = []
    for target in targets:
        # a call in a `raise` builds the exception that reports the failure, not the wrong value
        reporting = {id(n) for r in ast.walk(known[target]) if isinstance(r, ast.Raise) for n in ast.walk(r)}
        for node in ast.walk(known[target]):
            if not isinstance(node, ast.Call) or id(node) in reporting:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) \
                else None
            q = by_name.get(name or "")
            if q and q not in targets and q not in called:
                called.append(q)
    return list(dict.fromkeys(targets)), called[:MAX_CALLEES]


def fault_hint(workspace, files: list[str], test_output: str, task: str) -> str:
    """A short paragraph pointing past the definitions the model re-typed unchanged ("" when nothing is
    known)."""
    names = context.symbols(task, test_output)
    parts = []
    for path in files:
        if not path.endswith(".py") or not workspace.exists(path):
            continue
        targets, called = called_definitions(workspace.read_text(path), names)
        if targets and called:
            parts.append(f"The failing test runs {', '.join(targets)} in {path}, which calls "
                         f"{', '.join(called)}: the fault may be there rather than in what you re-wrote.")
    sites = traceback_sites(workspace, test_output)
    if sites:
        parts.append(f"The traceback passes through {', '.join(sites)}; the line it stops at is where the "
                     "wrong value shows, the fault is in the code that produced it.")
    return " ".join(parts)


def quoted_tests(edits: list, workspace, in_play: list[str]) -> list[str]:
    """The test files in play that hold an edit's SEARCH text while the edit names another file: a model
    that copies the failing assertion into a SEARCH block means to change the test, and is told where that
    text comes from instead of only that it was not found."""
    searches = [" ".join(getattr(e, "search", "").split()) for e in edits
                if not is_test_path(getattr(e, "path", ""))]
    if not any(searches):
        return []
    tests = {p: " ".join(workspace.read_text(p).split()) for p in in_play
             if is_test_path(p) and workspace.exists(p)}  # each read once, whitespace made single spaces
    return [p for p, text in tests.items() if any(s and s in text for s in searches)]
