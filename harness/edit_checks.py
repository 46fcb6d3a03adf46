"""Edits refused before anything is written, whatever the format: edits to test files (unless allowed),
edits that copy the instructions' example back (a new file under the placeholder `path/to/`), edits that
leave a file blank (an empty code fence; deleting a file is another edit), edits that copy an excerpt's
fold marker into the code or re-type a file shown only in part without its folded lines, edits that
leave every file as it was (a REPLACE identical to its SEARCH, the same file re-typed) or change only
the layout of Python code (blank lines, spacing: the same syntax tree and comments, so every test runs
the same code and fails the same way), edits that
break a Python file that parsed before (a syntax error fails every test, so no test run can say more
than the parser does, and a kept candidate must never be one that broke the import), and edits that
replace a working Python function's code with a placeholder body (`pass`, `...`, `raise
NotImplementedError`: small models stub out the methods around the one they mean to fix). Before any of that,
a reply that copies a placeholder line of the instructions' example (`<the old line>`) is the example,
not an edit, whatever file it names."""

from __future__ import annotations

import ast
import io
import re
import tokenize

from deltaserve.harness import feedback, formats
from deltaserve.harness.excerpt import has_fold_marker
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.syntax import language, new_syntax_error
from deltaserve.tools.patch import PatchResult
from deltaserve.tools.symbols import definitions, is_docstring
from deltaserve.tools.tests import is_test_path
from deltaserve.tools.workspace import Workspace

PLACEHOLDER_DIR = "path/to/"  # the folder of every format's example path (harness/formats/)
# A file seen only in part, re-typed with fewer than this share of its lines: the folded lines were dropped
KEPT_LINES_MIN = 0.5
# a placeholder alone on its line, as the examples write them (a diff line's mark and indentation allowed)
_PLACEHOLDER_LINE = re.compile(r"^[ +-]?\s*(<[a-z][^<>]*>)\s*$", re.MULTILINE)


def copied_placeholders(reply: str) -> list[str]:
    """The placeholder lines of any format's example (`<the new line>`) that the reply repeats."""
    examples = "\n".join(formats.get(name).instructions() for name in formats.names())
    known = set(_PLACEHOLDER_LINE.findall(examples))
    return list(dict.fromkeys(m for m in _PLACEHOLDER_LINE.findall(reply) if m in known))


def refusal(preview: PatchResult, workspace: Workspace, allow_test_edits: bool,
            seen_in_part: frozenset[str] = frozenset()) -> tuple[Outcome, str] | None:
    """(outcome, feedback for the model) when the previewed edits must not be applied, else None.
    `seen_in_part`: files the model has been shown only as an excerpt or head."""
    tests = [p for p in preview.files_changed if is_test_path(p)]
    if tests and not allow_test_edits:
        return Outcome.TEST_EDIT_REFUSED, feedback.test_edits_refused(tests)

    old = {p: workspace.read_text(p) if workspace.exists(p) else None for p in preview.new_contents}
    copied = [p for p in preview.new_contents if p.startswith(PLACEHOLDER_DIR) and old[p] is None]
    if copied:
        return Outcome.EXAMPLE_COPIED, feedback.example_copied(copied)
    # blank new text (not a deletion, which is None) where the file was not blank: a fence left empty
    blank = [p for p, text in preview.new_contents.items()
             if text is not None and not text.strip() and (old[p] is None or old[p].strip())]
    if blank:
        return Outcome.EMPTY_FILE, feedback.empty_files(blank)
    folded = [p for p, text in preview.new_contents.items()
              if text is not None and has_fold_marker(text) and not has_fold_marker(old[p] or "")]
    shrunk = [p for p, text in preview.new_contents.items() if p in seen_in_part and text is not None
              and old[p] and text.count("\n") < KEPT_LINES_MIN * old[p].count("\n")]
    if folded or shrunk:
        return Outcome.PARTIAL_FILE, feedback.partial_files(folded + [p for p in shrunk if p not in folded])
    if all(text is not None and text == old[p] for p, text in preview.new_contents.items()):
        return Outcome.NO_OP_EDIT, feedback.no_op_edits(list(preview.new_contents) or ["the files"])
    if all(layout_only(p, old[p], text) for p, text in preview.new_contents.items()):
        return Outcome.NO_OP_EDIT, feedback.layout_only_edits(list(preview.new_contents))
    for path, text in preview.new_contents.items():
        error = new_syntax_error(path, old[path], text)
        if error is not None:
            return Outcome.SYNTAX_ERROR, feedback.syntax_error(path, error, language(path))
    for path, text in preview.new_contents.items():
        stubbed = stubbed_functions(path, old[path], text)
        if stubbed:
            return Outcome.STUBBED_OUT, feedback.stubbed_out(path, stubbed)
    return None


def layout_only(path: str, old: str | None, new: str | None) -> bool:
    """`new` is the Python module `old` with only its layout changed (blank lines, spaces, line breaks
    inside brackets): the same syntax tree and the same comments. Docstrings are in the tree and comments
    are compared, so a changed docstring (a doctest) or comment (`# noqa`, `# type: ignore`) is a change."""
    if old == new:
        return old is not None
    if old is None or new is None or not path.endswith((".py", ".pyi")):
        return False
    try:
        return (ast.dump(ast.parse(old)) == ast.dump(ast.parse(new))
                and _comments(old) == _comments(new))
    except (SyntaxError, ValueError, tokenize.TokenError):
        return False


def _comments(text: str) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [t.string for t in tokens if t.type == tokenize.COMMENT]


def stubbed_functions(path: str, old: str | None, new: str | None) -> list[str]:
    """Functions and methods of a Python module whose code `new` replaces with a placeholder body (only a
    docstring, `pass`, `...` or `raise NotImplementedError`), by qualified name. A fix never deletes a
    function's code that way; an interface stub file (.pyi) is all placeholders and is left alone."""
    if old is None or new is None or not path.endswith(".py"):
        return []
    try:
        before, after = definitions(ast.parse(old)), definitions(ast.parse(new))
    except (SyntaxError, ValueError):
        return []
    return [name for name, node in after.items()
            if isinstance(node, _FUNCTIONS) and _placeholder_body(node)
            and isinstance(before.get(name), _FUNCTIONS) and not _placeholder_body(before[name])]


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _placeholder_body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = node.body[1:] if node.body and is_docstring(node.body[0]) else node.body
    return all(_is_placeholder(statement) for statement in body)


def _is_placeholder(node: ast.stmt) -> bool:
    if isinstance(node, ast.Pass):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return node.value.value is Ellipsis
    if isinstance(node, ast.Raise) and node.exc is not None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"
    return False
