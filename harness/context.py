"""Which files the model sees first: those named in the failing tests' traceback, those named in the task,
then definitions of the symbols both mention (grep), within size caps. A file over its cap is shown as an
excerpt of the code the failing tests reach (excerpt.py), not as its head."""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from deltaserve.harness import excerpt, python_refs
from deltaserve.harness.prompt import render_file
from deltaserve.tools.files import LineSearch
from deltaserve.tools.test_output import failing_test_names
from deltaserve.tools.tests import is_test_path

MAX_FILES = 6
MAX_FILE_CHARS = 12_000
MAX_TOTAL_CHARS = 24_000
TEST_FILE_SHARE = 0.35  # a test file's cap, as a share of max_file_chars
# Shrinking the caps for a small context window (x0.8 a step) stops at this scale.
MIN_CONTEXT_SCALE = 0.1

# `File "/abs/pkg/mod.py", line 3` (Python), `pkg/mod.py:3: in f` / `FAILED tests/t.py::test_x` (pytest),
# `at add (/abs/src/calc.js:3:10)` (JavaScript), `panicked at src/lib.rs:7:17` (Rust), `calc_test.go:8:` (Go)
_TRACE_PATH = re.compile(r'File "([^"]+)", line \d+|(?:^|[\s(])([\w./\\-]+\.\w+)(?::\d+|::)', re.MULTILINE)
_TASK_PATH = re.compile(r"[\w./-]*[\w-]\.[A-Za-z]\w*")
# frames (`mod.py:3: in f`, `, in f`) and pytest's assertion rewriting (`where -1 = add(2, 3)`)
_TRACE_SYMBOL = re.compile(r"(?::\d+: in |, in |\bwhere .* = )([A-Za-z_]\w*)")
# `name`, name(), snake_case, camelCase, Capitalized (a class, or just a sentence start: grep decides)
_TASK_SYMBOL = re.compile(r"`([A-Za-z_][\w.]*)(?:\(\))?`"
                          r"|\b([A-Za-z_]\w*(?=\()|[A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]\w{2,})\b")
MAX_SYMBOLS = 12
# a line defining one of {names}: Python and JavaScript/TypeScript (def, class, function, const/let/var,
# exports.name =), Rust (fn, struct, enum, trait), Go (func, methods included)
_DEFINITION = (r"^\s*(?:(?:export\s+(?:default\s+)?)?(?:async\s+)?(?:def|class|function\*?|const|let|var)\s+"
               r"|(?:pub(?:\([\w:]+\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait)\s+"
               r"|func(?:\s*\([^)]*\))?\s+|(?:module\.)?exports\.)({names})\b")
# a JavaScript/TypeScript module a file loads by relative path: require('./x'), import ... from '../x'
_RELATIVE_IMPORT = re.compile(r"""(?:\brequire\(\s*|\bfrom\s+|^\s*import\s+)['"](\.\.?/[^'"]+)['"]""",
                              re.MULTILINE)
JS_EXTENSIONS = (".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx")
MAX_DEFINING_FILES = 3
# the line of a frame: `File "/abs/pkg/mod.py", line 3` or `pkg/mod.py:3:`
_TRACE_LINE = re.compile(r'File "([^"]+)", line (\d+)|(?:^|[\s(])([\w./\\-]+\.\w+):(\d+)\b', re.MULTILINE)
# a source line pytest shows with `>` (the failing line), and the calls in it
_FAILING_LINE = re.compile(r"^>\s+(.*)$", re.MULTILINE)
_CALL = re.compile(r"\b([A-Za-z_]\w*)\(")


@dataclass(frozen=True)
class ContextFile:
    path: str
    content: str  # possibly cut to the size cap: its head, or an excerpt with fold markers
    truncated: bool = False
    line_numbers: tuple[int | None, ...] | None = None  # an excerpt's true line numbers (None: a marker)


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


def lines_in_traceback(workspace, text: str) -> dict[str, set[int]]:
    """Workspace file -> the line numbers its frames in the test output point at."""
    found: dict[str, set[int]] = {}
    for m in _TRACE_LINE.finditer(text):
        path = workspace_path(workspace, m.group(1) or m.group(3))
        if path:
            found.setdefault(path, set()).add(int(m.group(2) or m.group(4)))
    return found


def symbols(task: str, test_output: str) -> list[str]:
    """Function/class names worth looking up: traceback frames, the calls on the failing lines, then
    backticked or code-looking task words."""
    names = [m.group(1) for m in _TRACE_SYMBOL.finditer(test_output)]
    names += [c.group(1) for m in _FAILING_LINE.finditer(test_output) for c in _CALL.finditer(m.group(1))]
    names += [(m.group(1) or m.group(2)).split(".")[-1] for m in _TASK_SYMBOL.finditer(task)]
    return list(dict.fromkeys(n for n in names if n and not n.startswith("test")))[:MAX_SYMBOLS]


def definition_files(workspace, names: list[str]) -> list[str]:
    """Files defining any of these names (_DEFINITION: `def name`, `class name`, `function name`, ...), name
    by name in the order given, found in one pass over the workspace. A name defined in more than
    MAX_DEFINING_FILES files (a method every class of a big package overrides) cannot say which one
    matters: of its files only those that also define another of the names are kept."""
    if not names:
        return []
    rx = re.compile(_DEFINITION.format(names="|".join(map(re.escape, names))))
    defined_in: dict[str, list[str]] = {}
    for hit in LineSearch(workspace, rx):
        paths = defined_in.setdefault(hit.match.group(1), [])
        if hit.path not in paths:
            paths.append(hit.path)
    names_per_file = Counter(p for paths in defined_in.values() for p in paths)
    found: list[str] = []
    for name in names:
        paths = defined_in.get(name, [])
        if len(paths) > MAX_DEFINING_FILES:
            paths = [p for p in paths if names_per_file[p] > 1]
        found += [p for p in paths if p not in found]
    return found


def gather(workspace, task: str, test_output: str = "", max_files: int = MAX_FILES,
           max_file_chars: int = MAX_FILE_CHARS, max_total_chars: int = MAX_TOTAL_CHARS,
           suspect_lines: dict[str, set[int]] | None = None) -> list[ContextFile]:
    """Traceback files first (where the failure is), then task-named files, then the files of
    `suspect_lines` (the coverage suspects' best lines, tools/localize.py), then the definitions of the
    symbols they mention and of what the failing tests call, then the modules those files import; the code
    under test before the tests (a small model reads the code first and edits it, not the tests). Room is
    kept for the failing tests."""
    leaf_lines = {path: frozenset(lines) for path, lines in (suspect_lines or {}).items()}
    found = paths_in_traceback(workspace, test_output) + paths_in_task(workspace, task) + list(leaf_lines)
    failing = set(failing_test_names(test_output))
    texts = _Texts(workspace)
    names = symbols(task, test_output)
    for path in (p for p in found if is_test_path(p) and p.endswith(".py")):
        names += python_refs.called_by(texts.get(path) or "", failing)[:MAX_SYMBOLS]
    names = [n for n in dict.fromkeys(names) if not n.startswith("test")]
    found = list(dict.fromkeys(found + definition_files(workspace, names)))
    found += [m for p in list(found) for m in relative_imports(workspace, p, texts.get(p)) if m not in found]
    focus_lines = lines_in_traceback(workspace, test_output)
    imported: dict[str, set[str]] = {}
    for path in (p for p in found if p.endswith(".py")):
        text = texts.get(path) or ""
        leaves = leaf_lines.get(path, frozenset())
        used = None if is_test_path(path) else used_names(path, text, max_file_chars,
                                                          focus_lines.get(path, set()), set(names), leaves)
        for module, taken in python_refs.imported_modules(workspace, path, text).items():
            if used is not None and taken:
                taken = taken & used
                if not taken:
                    continue  # imported for code the excerpt leaves out
            if module in found or python_refs.defines_code(texts.get(module) or ""):
                imported.setdefault(module, set()).update(taken)
    tests = [p for p in found if is_test_path(p)]
    code = [p for p in [*found, *imported] if not is_test_path(p)]
    code = list(dict.fromkeys(code))[: max_files - min(len(tests), 1)]
    test_cap = int(max_file_chars * TEST_FILE_SHARE)  # a long test file: its failing tests matter
    reserve = min(len(tests), 2) * test_cap

    files: list[ContextFile] = []
    total = 0
    for path in code + tests:
        text = texts.get(path)
        room = max_total_chars - total - (reserve if path in code else 0)
        if text is None or len(files) >= max_files or room <= 0:
            continue
        test = path in tests
        cap = min(test_cap if test else max_file_chars, room)
        wanted = failing if test else set(names) | imported.get(path, set())
        shown = shown_part(path, text, cap, focus_lines.get(path, set()), wanted,
                           leaf_lines.get(path, frozenset()))
        if path not in found and shown.truncated and shown.line_numbers is None:
            continue  # an imported module with nothing in focus: its head would be noise
        files.append(shown)
        total += len(shown.content)
    return files


def relative_imports(workspace, path: str, text: str | None) -> list[str]:
    """The workspace files a JavaScript/TypeScript file loads by relative path (a test's module under test:
    its stack trace often stops in the test); the specifier as written, with an extension, or its index."""
    if text is None or not path.endswith(JS_EXTENSIONS):
        return []
    folder = Path(path).parent
    found = []
    for spec in _RELATIVE_IMPORT.findall(text):
        base = posixpath.normpath((folder / spec).as_posix())
        tries = [base, *(base + ext for ext in JS_EXTENSIONS),
                 *(f"{base}/index{ext}" for ext in JS_EXTENSIONS)]
        hit = next((p for p in (workspace_path(workspace, t) for t in tries) if p), None)
        if hit and hit not in found:
            found.append(hit)
    return found


def used_names(path: str, text: str, cap: int, focus_lines: set[int], names: set[str],
               leaf_lines: frozenset[int] = frozenset()) -> set[str] | None:
    """The names the code the model will see reads, when that is an excerpt of a Python file (None when the
    file fits its cap whole, or is cut another way): the modules it imports only for code the excerpt
    leaves out (a 1,000-line class used in another part of the file) are not worth their room."""
    if len(text) <= cap:
        return None
    shown = shown_part(path, text, cap, focus_lines, names, leaf_lines)
    if shown.line_numbers is None:
        return None
    return python_refs.names_used_on(text, {n for n in shown.line_numbers if n is not None})


class _Texts:
    """Workspace files read once; None for one that is binary or unreadable (not context)."""

    def __init__(self, workspace):
        self.workspace = workspace
        self._read: dict[str, str | None] = {}

    def get(self, path: str) -> str | None:
        if path not in self._read:
            try:
                self._read[path] = self.workspace.read_text(path)
            except (ValueError, OSError):
                self._read[path] = None
        return self._read[path]


def shown_part(path: str, text: str, cap: int, focus_lines: set[int], names: set[str],
               leaf_lines: frozenset[int] = frozenset()) -> ContextFile:
    """The file whole when it fits in `cap` characters, else its excerpt (`leaf_lines`: excerpt.py's), else
    its head (whole lines)."""
    if len(text) <= cap:
        return ContextFile(path, text)
    cut = excerpt.excerpt(path, text, focus_lines, names, cap, leaf_lines)
    if cut is not None:
        rows = cut.render(text)
        return ContextFile(path, "\n".join(line for _, line in rows) + "\n", truncated=True,
                           line_numbers=tuple(n for n, _ in rows))
    head = text[: text.rfind("\n", 0, cap) + 1] or text[:cap]
    return ContextFile(path, head, truncated=True)


def render(files: list[ContextFile], numbered: bool) -> str:
    if not files:
        return "Repository files: none were found from the task or the test output; use VIEW or GREP."
    parts = ["Repository files:"]
    for f in files:
        parts.append(render_file(f.path, f.content, numbered, line_numbers=f.line_numbers))
        if f.line_numbers is not None:
            parts.append(f"({f.path} is longer: shown above are the parts the failing tests reach; VIEW it "
                         "with a line range to see a folded part.)")
        elif f.truncated:
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
