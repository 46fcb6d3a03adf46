"""Splice new versions of Python functions and classes into a module, located by name with `ast`.

A model that rewrites one function in full needs to copy nothing exactly: each top-level `def`/`class` of
the new code replaces the definition of the same qualified name (`name`, or `Class.method` for a method,
found by its name when it is the only one so called) over its line span, decorators included; the
replacement is re-indented to where the old one stood (a multi-line string's lines are its content and stay
as written; a docstring's follow the code), and keeps the old decorators when it brings none.
A class written with only some of the methods it has (a model shown part of a file writes the class line
and the method it fixes) edits those members: each method replaces its namesake or is added at the class's
end, new class-level statements replace the old ones above the first method, and the methods and
class-level statements it leaves out stay (removing one is a SEARCH/REPLACE edit; one defining a name
the class now defines itself, like methods under `if sys.version_info`, is what that definition replaces).
Imports in the new code that the module lacks are added after its last top-level import. A definition the
module (or class) does not have yet goes where the reply puts it among the ones it has: after the one written
just before it, else before the one written just after it (a new helper above the function that uses it, a
new decorator above what it decorates), else at the end. The result must parse, or nothing is returned.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import Counter
from dataclasses import dataclass

from deltaserve.errors import PatchError

_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class _Span:
    start: int  # 0-based first line (its first decorator's)
    end: int  # 0-based, exclusive
    indent: str
    decorated: bool


_Edit = tuple[_Span, list[str]]  # lines[span.start:span.end] becomes the text


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


def parse_python(source: str) -> ast.Module | None:
    """`source` parsed, or None where it is not Python (a syntax error, or a null byte: ValueError)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _parse(source: str, what: str) -> ast.Module:
    try:
        return ast.parse(source)
    except SyntaxError as exc:
        raise PatchError(f"{what} is not valid Python: line {exc.lineno}: {exc.msg}") from exc


def locate(name: str, known: dict[str, ast.AST], path: str) -> str | None:
    """The qualified name a new top-level definition `name` replaces (`known`: the module's definitions):
    itself, else the one method so named; PatchError where several methods are so named."""
    if name in known:
        return name
    methods = [q for q in known if q.endswith(f".{name}")]
    if len(methods) > 1:
        raise PatchError(f"{path} has several methods named {name!r} ({', '.join(methods)}); write the whole "
                         f"class that holds the one you change.", path)
    return methods[0] if methods else None


def _inside_strings(lines: list[str]) -> dict[int, bool]:
    """For each of `lines` (by index) that starts inside a multi-line string literal: whether that string is
    a statement of its own (a docstring). {} when the lines do not tokenize."""
    found: dict[int, bool] = {}
    fstring_rows: list[int] = []  # Python 3.12+ splits an f-string into FSTRING_START ... FSTRING_END
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
                  if t.type not in (tokenize.NL, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        return {}
    edges = (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for k, token in enumerate(tokens):
        if token.type == getattr(tokenize, "FSTRING_START", None):
            fstring_rows.append(token.start[0])
        elif token.type == getattr(tokenize, "FSTRING_END", None):
            found.update(dict.fromkeys(range(fstring_rows.pop(), token.end[0]), False))
        elif token.type == tokenize.STRING and token.end[0] > token.start[0]:
            alone = (k == 0 or tokens[k - 1].type in edges) and tokens[k + 1].type in edges
            # its lines after the first: 1-based rows start + 1 .. end are indices start .. end - 1
            found.update(dict.fromkeys(range(token.start[0], token.end[0]), alone))
    return found


def _reindent(lines: list[str], indent: str) -> list[str]:
    """`lines` moved from their common indentation to `indent`. A line inside a string literal is the
    string's content: it does not count for the common indentation, and it stays as written unless the
    string is a docstring (whose indentation follows the code's). Unlike textwrap.dedent, a whitespace-only
    line keeps what lies beyond the margin: inside a docstring that whitespace is content."""
    inside = _inside_strings(lines)
    margin = min((len(line) - len(line.lstrip()) for i, line in enumerate(lines)
                  if line.strip() and i not in inside), default=0)
    out = []
    for i, line in enumerate(lines):
        if inside.get(i) is False:
            out.append(line)
            continue
        line = line[min(margin, len(line) - len(line.lstrip())) :]
        out.append(indent + line if line else "")
    return out


def at_margin(code: str) -> str:
    """Code a model wrote at some indentation (a method copied at its class's) moved to the margin, as a
    module reads it; a string literal's own lines stay as _reindent keeps them."""
    first = next((line for line in code.split("\n") if line.strip()), "")
    if first == first.lstrip():  # at the margin already (the first line is never a string's own)
        return code
    return "\n".join(_reindent(code.split("\n"), ""))


def _new_text(node: ast.AST, new_lines: list[str], keep_decorators: list[str], indent: str) -> list[str]:
    first = first_line(node)
    body = _reindent(new_lines[first - 1 : node.end_lineno], indent)
    if not node.decorator_list:
        body = [indent + line if line else "" for line in keep_decorators] + body
    return body


def _missing_imports(new_tree: ast.Module, new_lines: list[str], source_lines: list[str]) -> list[str]:
    present = {line.strip() for line in source_lines}
    imports = [n for n in new_tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    text = ["\n".join(new_lines[n.lineno - 1 : n.end_lineno]) for n in imports]
    return [t for t in text if t.strip() not in present]


def _replacement(nodes: list[ast.AST], old: ast.AST, new_lines: list[str], lines: list[str],
                 blank: int) -> _Edit:
    """The old definition's span and the new ones' text for it (`blank` lines apart), re-indented; one new
    definition without decorators keeps the old ones."""
    span = _span(old, lines)
    old_decorators = [line.strip() and line[len(span.indent):] for line in lines[span.start : old.lineno - 1]]
    keep = old_decorators if len(nodes) == 1 else []
    gap = [""] * blank
    text = [line for node in nodes for line in [*gap, *_new_text(node, new_lines, keep, span.indent)]]
    return span, text[blank:]


def _decorators(node: ast.AST) -> list[str]:
    return [ast.dump(d) for d in node.decorator_list]


def _match(news: list[ast.AST], olds: list[ast.AST], path: str) -> list[ast.AST | None]:
    """The old definition each of `news` (the reply's definitions of one name in one scope) replaces, None
    for a new one. A name defined several times (overloads, a property's getter and setter) pairs up in
    order when the reply writes as many, else with the one that has the same decorators; a name defined
    once takes all the new ones (overloads added to a function)."""
    if not olds:
        return [None] * len(news)
    if len(news) == len(olds):
        return list(olds)
    if len(olds) == 1:
        return [olds[0]] * len(news)
    if len(news) == 1:
        alike = [o for o in olds if _decorators(o) == _decorators(news[0])]
        if len(alike) == 1:
            return alike
    raise PatchError(
        f"{path} defines {news[0].name!r} {len(olds)} times (overloads, or a property's getter and setter); "
        f"write all {len(olds)} of them in order, or only the one you change with its decorators.", path)


def _olds(news: list[ast.AST], scope_of, path: str) -> list[ast.AST | None]:
    """The old definition each new one replaces (None: it is new); `scope_of(node)` gives the old
    statements a new definition's name is looked up among (None: nowhere)."""
    groups: dict[tuple[int, str], list[int]] = {}
    scopes: dict[int, list[ast.AST]] = {}
    for i, node in enumerate(news):
        scope = scope_of(node)
        if scope is not None:
            scopes[id(scope)] = scope
            groups.setdefault((id(scope), node.name), []).append(i)
    found: list[ast.AST | None] = [None] * len(news)
    for (scope_id, name), idx in groups.items():
        olds = [d for d in scopes[scope_id] if isinstance(d, _DEFINITION) and d.name == name]
        for i, old in zip(idx, _match([news[i] for i in idx], olds, path), strict=True):
            found[i] = old
    return found


def _replacements(news: list[ast.AST], olds: list[ast.AST | None], new_lines: list[str], lines: list[str],
                  blank: int, path: str) -> list[_Edit]:
    """Each old definition's edit by the new ones that replace it (a partial class: its members')."""
    by_old: dict[int, tuple[ast.AST, list[ast.AST]]] = {}
    for node, old in zip(news, olds, strict=True):
        if old is not None:
            by_old.setdefault(id(old), (old, []))[1].append(node)
    edits = []
    for old, nodes in by_old.values():
        if len(nodes) == 1 and isinstance(nodes[0], ast.ClassDef) and isinstance(old, ast.ClassDef) \
                and _leaves_out_members(nodes[0], old):
            edits += _member_edits(nodes[0], old, new_lines, lines, path)
        else:
            edits.append(_replacement(nodes, old, new_lines, lines, blank))
    return edits


def _methods(node: ast.ClassDef) -> list[ast.AST]:
    return [child for child in node.body if isinstance(child, _DEFINITION)]


def _statements(node: ast.ClassDef) -> list[ast.AST]:
    """A class's own statements (attributes, ...) besides its methods and docstring."""
    return [c for c in node.body if not isinstance(c, _DEFINITION) and not is_docstring(c)]


def _binds(node: ast.AST) -> set[str]:
    """The names a class-level statement defines or assigns, inside its `if`/`try` blocks too."""
    if isinstance(node, _DEFINITION):
        return {node.name}
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    names = {n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)}
    for block in ("body", "orelse", "finalbody", "handlers"):
        for child in getattr(node, block, []):
            names |= _binds(child)
    return names


def left_out_statements(new: ast.ClassDef, old: ast.ClassDef) -> list[ast.AST]:
    """The old class-level statements a new version of the class leaves out, and so keeps: all of them when
    it has none of its own (`__slots__ = ()` above the one method a model rewrote), except those defining a
    name it defines itself (the methods under `if sys.version_info ...` it now defines once)."""
    if _statements(new):
        return []
    defined = {m.name for m in _methods(new)}
    return [s for s in _statements(old) if not _binds(s) & defined]


def _leaves_out_members(new: ast.ClassDef, old: ast.ClassDef) -> bool:
    """The new class lacks some old methods, old class-level statements (`left_out_statements`) or the old
    docstring: it edits those members, it does not replace the class."""
    methods_left_out = Counter(m.name for m in _methods(old)) - Counter(m.name for m in _methods(new))
    docstring_left_out = is_docstring(old.body[0]) and not is_docstring(new.body[0])
    return bool(methods_left_out) or bool(left_out_statements(new, old)) or docstring_left_out


def _member_edits(new: ast.ClassDef, old: ast.ClassDef, new_lines: list[str],
                  lines: list[str], path: str) -> list[_Edit]:
    """A partial class's edits of the old class: its methods by name, its class-level statements (those
    above its first method, when it has any besides a docstring) over the old ones."""
    body_line = lines[old.body[0].lineno - 1]
    member_indent = body_line[: len(body_line) - len(body_line.lstrip())]
    methods = _methods(new)
    olds = _olds(methods, lambda _: old.body, path)
    edits = _replacements(methods, olds, new_lines, lines, 1, path)
    class_end = _Span(old.end_lineno, old.end_lineno, member_indent, False)
    edits += _insertions(methods, olds, new_lines, lines, member_indent, 1, class_end)
    if _statements(new):
        first_new = min((first_line(m) for m in _methods(new)), default=new.end_lineno + 1)
        first_old = min((first_line(m) for m in _methods(old)), default=old.end_lineno + 1)
        header = _reindent(new_lines[new.body[0].lineno - 1 : first_new - 1], member_indent)
        # the old docstring stays unless the new statements bring their own
        keep_doc = is_docstring(old.body[0]) and not is_docstring(new.body[0])
        start = old.body[0].end_lineno if keep_doc else old.body[0].lineno - 1
        text = "\n".join(header).rstrip().split("\n")
        edits.append((_Span(start, first_old - 1, member_indent, False), [""] * keep_doc + text + [""]))
    return edits


def first_line(node: ast.AST) -> int:
    """A definition's first line: its first decorator's (a statement without decorators: its own)."""
    return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])


def is_docstring(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def replace_symbols(source: str, new_code: str, path: str = "<file>") -> str:
    """`source` with every definition in `new_code` put in place (see the module docstring)."""
    new_tree = _parse(new_code, f"The code for {path}")
    new_lines = new_code.split("\n")
    tree = _parse(source, path)
    lines = source.split("\n")
    known = definitions(tree)
    nodes = [node for node in new_tree.body if isinstance(node, _DEFINITION)]
    if not nodes:
        raise PatchError(f"The code for {path} defines no function or class; write the complete new version "
                         "of each function or class you change.", path)
    targets = {id(node): locate(node.name, known, path) for node in nodes}

    def scope_of(node: ast.AST) -> list[ast.AST] | None:  # a method written alone: its class's body
        target = targets[id(node)]
        return None if target is None else known[target.split(".")[0]].body if "." in target else tree.body

    olds = _olds(nodes, scope_of, path)
    edits = _replacements(nodes, olds, new_lines, lines, 2, path)
    # a method written alone is no anchor for a new top-level definition: that would land inside its class
    anchors = [old if old is not None and "." not in targets[id(node)] else None
               for node, old in zip(nodes, olds, strict=True)]
    module_end = _Span(len(lines), len(lines), "", False)
    edits += _insertions(nodes, anchors, new_lines, lines, "", 2, module_end, olds)
    # bottom-up, so earlier spans keep their line numbers. At one line, what is applied last lands on top: a
    # replacement goes before an insertion there, and a new method at its class's end goes after a new
    # definition placed after that class (deeper insertions are applied later)
    order = lambda edit: (edit[0].start, edit[0].end, -len(edit[0].indent))  # noqa: E731
    for span, text in sorted(edits, key=order, reverse=True):
        lines[span.start : span.end] = text
    result = _with_imports(lines, _missing_imports(new_tree, new_lines, lines), tree)
    _parse(result, f"{path} after the edit")
    return result


def _insertions(nodes: list[ast.AST], anchors: list[ast.AST | None], new_lines: list[str], lines: list[str],
                indent: str, blank: int, end: _Span, olds: list | None = None) -> list[_Edit]:
    """Where each run of new definitions (`nodes[i]` whose `olds[i]`, default `anchors[i]`, is None) goes:
    after the old definition anchoring the reply's item just before the run, else before the one just after
    it (above its comments), else at `end`; `blank` lines apart, re-indented to `indent`."""
    olds = anchors if olds is None else olds
    gap = [""] * blank
    edits = []
    i = 0
    while i < len(nodes):
        if olds[i] is not None:
            i += 1
            continue
        j = i
        while j < len(nodes) and olds[j] is None:
            j += 1
        text = [line for node in nodes[i:j] for line in [*gap, *_new_text(node, new_lines, [], indent)]]
        before = anchors[i - 1] if i > 0 else None
        after = anchors[j] if j < len(nodes) else None
        if before is not None:
            at = _span(before, lines).end
            edits.append((_Span(at, at, indent, False), text))
        elif after is not None:
            at = _above_comments(_span(after, lines).start, lines)
            edits.append((_Span(at, at, indent, False), text[blank:] + gap))
        else:
            at = _content_end(lines, end.start)
            edits.append((_Span(at, end.start, indent, False), text + [""] * (end.start > at)))
        i = j
    return edits


def _above_comments(start: int, lines: list[str]) -> int:
    """`start` moved up over the comment lines right above it (they belong to the definition there)."""
    while start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1
    return start


def _content_end(lines: list[str], end: int) -> int:
    """`end` moved up over the blank lines before it."""
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    return end


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
