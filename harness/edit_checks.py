"""The checks previewed edits meet before anything is written (CHECKS, run by pipeline.py in this order;
each takes the draft and the context and raises ReplyRejected), whatever the format: edits to test files
(unless allowed),
edits that copy the instructions' example back (a new file under the placeholder `path/to/`), edits that
leave a file blank (an empty code fence; deleting a file is another edit), edits that copy an excerpt's
fold marker into the code or re-type a file shown only in part without its folded lines, edits that
leave every file as it was (a REPLACE identical to its SEARCH, the same file re-typed) or change only
the layout of Python code (blank lines, spacing: the same syntax tree and comments, so every test runs
the same code and fails the same way), edits that
break a Python file that parsed before (a syntax error fails every test, so no test run can say more
than the parser does, and a kept candidate must never be one that broke the import), and edits that
replace a working Python function's code with a placeholder body (`pass`, `...`, `raise
NotImplementedError`: small models stub out the methods around the one they mean to fix), and edits giving
code whose tests have run already (tried_code.py). Before any of that, a reply that copies a placeholder
line of the instructions' example (`<the old line>`) is the example, not an edit, whatever file it names
(reply_checks.py)."""

from __future__ import annotations

import ast
import io
import re
import tokenize

from deltaserve.errors import ReplyRejected
from deltaserve.harness import feedback, formats
from deltaserve.harness.excerpt import has_fold_marker
from deltaserve.harness.fault_hints import fault_hint
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.syntax import language, new_syntax_error
from deltaserve.harness.trial import Context, Draft
from deltaserve.tools.symbols import definitions, is_docstring
from deltaserve.tools.tests import is_test_path

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


def test_edits(draft: Draft, ctx: Context) -> None:
    tests = [p for p in draft.preview.files_changed if is_test_path(p)]
    if tests and not ctx.config.allow_test_edits:
        _refuse(Outcome.TEST_EDIT_REFUSED, feedback.test_edits_refused(tests))


def example_paths(draft: Draft, ctx: Context) -> None:
    copied = [p for p in draft.preview.new_contents if p.startswith(PLACEHOLDER_DIR) and draft.old[p] is None]
    if copied:
        _refuse(Outcome.EXAMPLE_COPIED, feedback.example_copied(copied))


def blank_files(draft: Draft, ctx: Context) -> None:
    """Blank new text (not a deletion, which is None) where the file was not blank: a fence left empty."""
    old = draft.old
    blank = [p for p, text in draft.preview.new_contents.items()
             if text is not None and not text.strip() and (old[p] is None or old[p].strip())]
    if blank:
        _refuse(Outcome.EMPTY_FILE, feedback.empty_files(blank))


def partial_files(draft: Draft, ctx: Context) -> None:
    """A fold marker copied into the code, or a file seen only in part re-typed without its folded lines."""
    old, new = draft.old, draft.preview.new_contents
    folded = [p for p, text in new.items()
              if text is not None and has_fold_marker(text) and not has_fold_marker(old[p] or "")]
    shrunk = [p for p, text in new.items() if p in ctx.seen_in_part and text is not None
              and old[p] and text.count("\n") < KEPT_LINES_MIN * old[p].count("\n")]
    if folded or shrunk:
        _refuse(Outcome.PARTIAL_FILE, feedback.partial_files(folded + [p for p in shrunk if p not in folded]))


def unchanged_files(draft: Draft, ctx: Context) -> None:
    new = draft.preview.new_contents
    if all(text is not None and text == draft.old[p] for p, text in new.items()):
        told = feedback.no_op_edits(list(new) or ["the files"])
        _refuse(Outcome.NO_OP_EDIT, no_op_feedback(told, list(new) or draft.edited_paths(), ctx))


def layout_only_edits(draft: Draft, ctx: Context) -> None:
    new = draft.preview.new_contents
    if all(layout_only(p, draft.old[p], text) for p, text in new.items()):
        _refuse(Outcome.NO_OP_EDIT, no_op_feedback(feedback.layout_only_edits(list(new)), list(new), ctx))


def syntax_errors(draft: Draft, ctx: Context) -> None:
    for path, text in draft.preview.new_contents.items():
        error = new_syntax_error(path, draft.old[path], text)
        if error is not None:
            _refuse(Outcome.SYNTAX_ERROR, feedback.syntax_error(path, error, language(path)))


def stubs(draft: Draft, ctx: Context) -> None:
    for path, text in draft.preview.new_contents.items():
        stubbed = stubbed_functions(path, draft.old[path], text)
        if stubbed:
            _refuse(Outcome.STUBBED_OUT, feedback.stubbed_out(path, stubbed))


def repeated_code(draft: Draft, ctx: Context) -> None:
    """Edits giving code whose tests have run already in this run (tried_code.py); a dry run writes none."""
    if draft.state in ctx.tried and not ctx.config.dry_run:
        _refuse(Outcome.REPEATED_EDIT, feedback.repeated_edit(ctx.tried[draft.state]))


def no_op_feedback(told: str, files: list[str], ctx: Context) -> str:
    """What the model is told after a no-op edit: why it was refused, then where else to look."""
    return "\n".join(filter(None, [told, fault_hint(ctx.workspace, files, ctx.test_output, ctx.task)]))


def _refuse(outcome: Outcome, told: str) -> None:
    raise ReplyRejected(outcome, told, told)


# in this order: the first that objects says why
CHECKS = (test_edits, example_paths, blank_files, partial_files, unchanged_files, layout_only_edits,
          syntax_errors, stubs, repeated_code)


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
