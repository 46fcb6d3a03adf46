"""A file too long for the context, cut to the code the failing tests reach.

The head of a long module is rarely where its bug is (in the bundled suite most fixes sit past its first
12,000 characters), and a model that is shown the wrong part edits the wrong part. So a long file is shown
as the definitions that matter, in file order, with every other stretch folded to one marker line:

- Python: the functions, methods, classes and module-level assignments ranked by distance from the seeds
  (definitions holding a traceback line of this file, then definitions with a name the task or the test
  output mentions), following the names each shown definition uses, nearest first, until the size cap.
  Definitions holding a leaf line (where coverage says only the failing tests go) are shown after the
  seeds, without following what they use: they may be where the failure shows, not where it starts.
  A method shown keeps its class's header lines; the module's imports are shown while they fit.
- other text: windows of lines around the traceback lines and the lines that mention a seed name.

Line numbers stay true (the marker says which lines are folded), so VIEW ranges, unified diffs and
tracebacks keep meaning the same lines.
"""

from __future__ import annotations

import ast
import heapq
import re
from dataclasses import dataclass

from deltaserve.harness.python_refs import type_hint_ids
from deltaserve.tools.symbols import first_line

FOLD = "⋮"  # starts every fold marker: text no real source line starts with, so a copied one is caught
WINDOW_LINES = 12  # lines either side of a focus line in a file that is not Python
CALL_STEP, REFERENCE_STEP = 1, 3  # how much farther a definition is than the one that calls / reads it
HEADER_SHARE = 0.15  # a module's imports go first when they take at most this share of the cap


@dataclass(frozen=True)
class Excerpt:
    lines: list[tuple[int, int]]  # 1-based inclusive line ranges shown, in order, not touching

    def render(self, text: str) -> list[tuple[int | None, str]]:
        """(line number, text) rows; a fold marker has no number."""
        source = text.split("\n")
        rows: list[tuple[int | None, str]] = []
        shown_to = 0
        for start, end in self.lines:
            if start > shown_to + 1:
                rows.append((None, fold_marker(shown_to + 1, start - 1)))
            rows += [(n, source[n - 1]) for n in range(start, end + 1)]
            shown_to = end
        last = len(source) - (source[-1] == "")
        if shown_to < last:
            rows.append((None, fold_marker(shown_to + 1, last)))
        return rows


def fold_marker(first: int, last: int) -> str:
    what = f"line {first}" if first == last else f"lines {first}-{last}"
    return f"{FOLD} {what} not shown (VIEW the file with a line range to see them)"


def has_fold_marker(text: str) -> bool:
    """Whether text holds a copied fold marker (one is never source)."""
    return any(line.lstrip().startswith(f"{FOLD} line") for line in text.split("\n"))


@dataclass
class _Unit:
    """A span the excerpt can show: one definition's own lines (a class's header without its methods)."""

    name: str
    start: int
    end: int
    uses: dict[str, int]  # name -> distance (CALL_STEP, REFERENCE_STEP)
    parent: _Unit | None = None
    init: _Unit | None = None  # a class's __init__: shown when the class is (a call of it runs that)
    is_class: bool = False


def _uses(node: ast.AST) -> dict[str, int]:
    """Name -> distance of the names a definition uses: CALL_STEP for what it calls, REFERENCE_STEP for
    what else it reads. Type annotations are left out: a type named in a signature is rarely the bug."""
    skip = type_hint_ids(node)
    uses: dict[str, int] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = _called_name(sub.func)
            if name:
                uses[name] = CALL_STEP
    for sub in ast.walk(node):
        if id(sub) in skip:
            continue
        # an argument may name a pytest fixture: the definition of that name is then what it receives
        name = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else \
            sub.arg if isinstance(sub, ast.arg) else None
        if name and name not in uses:
            uses[name] = REFERENCE_STEP
    return uses


def _called_name(func: ast.AST) -> str | None:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _units(tree: ast.Module) -> list[_Unit]:
    """Top-level definitions and assignments, and the methods of classes, each with the names it uses. A
    class's own unit is its header: from its first line to the line before its first method."""
    units: list[_Unit] = []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                    units.append(_Unit(name, node.lineno, node.end_lineno, _uses(node.value or target)))
        elif isinstance(node, ast.ClassDef):
            methods = [child for child in node.body if isinstance(child, defs)]
            header_end = first_line(methods[0]) - 1 if methods else node.end_lineno
            header_uses: dict[str, int] = {}
            for part in (c for c in [*node.bases, *node.body] if c not in methods):
                header_uses = _uses(part) | header_uses
            cls = _Unit(node.name, first_line(node), header_end, header_uses, is_class=True)
            units.append(cls)
            for child in methods:
                units.append(_Unit(child.name, first_line(child), child.end_lineno, _uses(child), cls))
                if child.name == "__init__":
                    cls.init = units[-1]
        elif isinstance(node, defs):
            units.append(_Unit(node.name, first_line(node), node.end_lineno, _uses(node)))
    return units


def python_excerpt(text: str, focus_lines: set[int], names: set[str], cap: int,
                   leaf_lines: frozenset[int] = frozenset()) -> Excerpt | None:
    """The excerpt of a Python module within `cap` characters, or None when it does not parse or nothing in
    it is a seed (the caller then shows its head)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    source = text.split("\n")
    units = _units(tree)
    seeds = [u for u in units if any(u.start <= n <= u.end for n in focus_lines)]
    seeds += [u for u in units if u.name in names and u not in seeds]
    leaves = [u for u in units if any(u.start <= n <= u.end for n in leaf_lines) and u not in seeds]
    if not seeds and not leaves:
        return None
    by_name: dict[str, list[_Unit]] = {}
    for unit in units:
        by_name.setdefault(unit.name, []).append(unit)

    chosen: set[int] = set()  # line numbers shown
    size = 0

    def take(start: int, end: int) -> bool:
        nonlocal size
        new = [n for n in range(start, end + 1) if n not in chosen]
        cost = sum(len(source[n - 1]) + 1 for n in new)
        if size + cost > cap:
            return False
        chosen.update(new)
        size += cost
        return True

    # the module docstring and imports: first when they are short, else last if they still fit
    header_end = min((first_line(n) for n in tree.body if not isinstance(n, ast.Import | ast.ImportFrom
                      | ast.Expr)), default=len(source)) - 1
    header_first = sum(len(line) + 1 for line in source[:header_end]) <= HEADER_SHARE * cap
    if header_end >= 1 and header_first:
        take(1, header_end)
    # nearest first: what the seeds call, then what that calls, ...; what they only read comes later
    heap = [(0, order, unit) for order, unit in enumerate(seeds + leaves)]
    settled: set[int] = set()
    order = len(heap)
    while heap:
        distance, _, unit = heapq.heappop(heap)
        if id(unit) in settled:
            continue
        settled.add(id(unit))
        if unit.parent is not None and not take(unit.parent.start, unit.parent.end):
            continue
        if not take(unit.start, unit.end) or unit in leaves:
            continue
        steps = [(unit.init, CALL_STEP)] if unit.init else []
        # a call of a class reads its fields more than it runs code: as far as a reference
        steps += [(used, REFERENCE_STEP if used.is_class else step)
                  for name, step in sorted(unit.uses.items()) for used in by_name.get(name, [])]
        for used, step in steps:
            if id(used) not in settled:
                order += 1
                heapq.heappush(heap, (distance + step, order, used))
    if header_end >= 1 and not header_first:
        take(1, header_end)
    return Excerpt(_ranges(chosen, source))


def text_excerpt(text: str, focus_lines: set[int], names: set[str], cap: int,
                 leaf_lines: frozenset[int] = frozenset()) -> Excerpt | None:
    """Windows of WINDOW_LINES around the focus lines, the leaf lines, then around lines that mention a
    name, within cap."""
    source = text.split("\n")
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(names))) + r")\b") if names else None
    centres = sorted(n for n in focus_lines if 1 <= n <= len(source))
    centres += sorted(n for n in leaf_lines if 1 <= n <= len(source))
    centres += [i + 1 for i, line in enumerate(source) if pattern and pattern.search(line)]
    if not centres:
        return None
    chosen: set[int] = set()
    size = 0
    for centre in dict.fromkeys(centres):
        window = range(max(1, centre - WINDOW_LINES), min(len(source), centre + WINDOW_LINES) + 1)
        cost = sum(len(source[n - 1]) + 1 for n in window if n not in chosen)
        if size + cost > cap:
            break
        chosen.update(window)
        size += cost
    return Excerpt(_ranges(chosen, source)) if chosen else None


def _ranges(chosen: set[int], source: list[str]) -> list[tuple[int, int]]:
    """Sorted line ranges; a gap of blank lines only is shown rather than folded."""
    ranges: list[tuple[int, int]] = []
    for n in sorted(chosen):
        if ranges and all(not source[m - 1].strip() for m in range(ranges[-1][1] + 1, n)):
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return ranges


def excerpt(path: str, text: str, focus_lines: set[int], names: set[str], cap: int,
            leaf_lines: frozenset[int] = frozenset()) -> Excerpt | None:
    """What to show of a file longer than `cap` characters (None: nothing in it is in focus)."""
    if path.endswith(".py"):
        found = python_excerpt(text, focus_lines, names, cap, leaf_lines)
        if found is not None:
            return found
    return text_excerpt(text, focus_lines, names, cap, leaf_lines)
