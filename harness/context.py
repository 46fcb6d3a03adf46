"""Which files the model sees first: those named in the failing tests' traceback, those named in the task,
then definitions of the symbols both mention (grep), within size caps."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from deltaserve.harness.prompt import render_file
from deltaserve.tools.files import grep
from deltaserve.tools.tests import is_test_path

MAX_FILES = 6
MAX_FILE_CHARS = 12_000
MAX_TOTAL_CHARS = 24_000
# Shrinking the caps for a small context window (x0.8 a step) stops at this scale.
MIN_CONTEXT_SCALE = 0.1

# `File "/abs/pkg/mod.py", line 3` (Python), `pkg/mod.py:3: in f` / `FAILED tests/t.py::test_x` (pytest)
_TRACE_PATH = re.compile(r'File "([^"]+)", line \d+|(?:^|\s)([\w./\\-]+\.\w+)(?::\d+|::)', re.MULTILINE)
_TASK_PATH = re.compile(r"[\w./-]*[\w-]\.[A-Za-z]\w*")
# frames (`mod.py:3: in f`, `, in f`) and pytest's assertion rewriting (`where -1 = add(2, 3)`)
_TRACE_SYMBOL = re.compile(r"(?::\d+: in |, in |\bwhere .* = )([A-Za-z_]\w*)")
# `name`, name(), snake_case, camelCase, Capitalized (a class, or just a sentence start: grep decides)
_TASK_SYMBOL = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`"
                          r"|\b([A-Za-z_]\w*(?=\()|[A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]\w{2,})\b")
MAX_SYMBOLS = 12


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str  # possibly cut to the size cap
    truncated: bool = False


def workspace_path(workspace, name: str) -> str | None:
    """A workspace-relative path for a name from a traceback or task, if it is a file inside the workspace."""
    path = Path(name)
    if path.is_absolute():
        try:
            name = str(path.resolve().relative_to(workspace.root))
        except ValueError:
            return None  # outside the workspace (stdlib, site-packages)
    try:
        return workspace.relpath(name) if workspace.exists(name) else None
    except ValueError:
        return None


def paths_in_traceback(workspace, text: str) -> list[str]:
    found = [workspace_path(workspace, m.group(1) or m.group(2)) for m in _TRACE_PATH.finditer(text)]
    return list(dict.fromkeys(p for p in found if p))


def paths_in_task(workspace, text: str) -> list[str]:
    found = [workspace_path(workspace, m.group(0)) for m in _TASK_PATH.finditer(text)]
    return list(dict.fromkeys(p for p in found if p))


def symbols(task: str, test_output: str) -> list[str]:
    """Function/class names worth looking up: traceback frames, then backticked or code-looking task words."""
    names = [m.group(1) for m in _TRACE_SYMBOL.finditer(test_output)]
    names += [(m.group(1) or m.group(2)).split(".")[-1] for m in _TASK_SYMBOL.finditer(task)]
    return list(dict.fromkeys(n for n in names if n and not n.startswith("test")))[:MAX_SYMBOLS]


def definition_files(workspace, names: list[str]) -> list[str]:
    """Files defining any of these names (`def name` / `class name`), via tools.files.grep."""
    if not names:
        return []
    found: list[str] = []
    for name in names:
        # "path:line: text" lines
        hits = grep(workspace, rf"^\s*(async\s+def|def|class)\s+{re.escape(name)}\b")
        for m in re.finditer(r"^(.+?):\d+: ", hits, flags=re.MULTILINE):
            if m.group(1) not in found:
                found.append(m.group(1))
    return found


def gather(workspace, task: str, test_output: str = "", max_files: int = MAX_FILES,
           max_file_chars: int = MAX_FILE_CHARS, max_total_chars: int = MAX_TOTAL_CHARS) -> list[ContextFile]:
    """Traceback files first (where the failure is), then task-named files, then symbol definitions; the
    code under test before the tests (a small model reads the code first and edits it, not the tests)."""
    ordered = paths_in_traceback(workspace, test_output) + paths_in_task(workspace, task)
    ordered += definition_files(workspace, symbols(task, test_output))
    ordered = sorted(dict.fromkeys(ordered), key=is_test_path)  # stable: each group keeps its order
    files: list[ContextFile] = []
    total = 0
    for path in dict.fromkeys(ordered):
        if len(files) >= max_files or total >= max_total_chars:
            break
        try:
            text = workspace.read_text(path)
        except ValueError:
            continue  # binary or unreadable: not context
        cap = min(max_file_chars, max_total_chars - total)
        # whole lines
        shown = text if len(text) <= cap else text[: text.rfind("\n", 0, cap) + 1] or text[:cap]
        files.append(ContextFile(path, shown, truncated=len(shown) < len(text)))
        total += len(shown)
    return files


def render(files: list[ContextFile], numbered: bool) -> str:
    if not files:
        return "Repository files: none were found from the task or the test output; use VIEW or GREP."
    parts = ["Repository files:"]
    for f in files:
        parts.append(render_file(f.path, f.content, numbered))
        if f.truncated:
            parts.append(f"({f.path} is longer; VIEW it with a line range to see the rest.)")
    return "\n\n".join(parts)


def fitting_scale(fits) -> float | None:
    """The largest scale of the size caps (1, 0.8, 0.64, ... down to MIN_CONTEXT_SCALE) for which
    `fits(scale)` holds, or None: the context shrunk only as far as a model's window needs."""
    scale = 1.0
    while scale >= MIN_CONTEXT_SCALE:
        if fits(scale):
            return scale
        scale *= 0.8
    return None
