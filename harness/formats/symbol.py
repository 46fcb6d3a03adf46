"""`symbol`: the model writes the complete new version of each function or class it changes.

Syntax: the file's path alone on a line, then a code fence holding the new definitions (one or several,
with any imports they need). Nothing old has to be copied exactly and a reply costs a function, not a file:
Python files are edited with `ast` by qualified name (tools/symbols.py); for files in other languages the
model writes SEARCH/REPLACE blocks instead, applied as in `search_replace`. Its counterfactual is, as for
every format, the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaserve.errors import PatchError
from deltaserve.harness.formats.whole import render
from deltaserve.tools.diff_marks import without_diff_marks
from deltaserve.tools.named_blocks import named_blocks
from deltaserve.tools.patch import (
    PatchResult,
    SearchReplace,
    apply_search_replace_blocks,
    parse_search_replace_blocks,
    write_file,
)
from deltaserve.tools.symbols import at_margin, replace_symbols
from deltaserve.tools.workspace import Workspace


@dataclass(frozen=True)
class SymbolEdit:
    path: str
    code: str  # complete new definitions


def block_code(content: str) -> str:
    """A named Python block's code as the format reads it: diff marks taken out (tools/diff_marks.py), code
    written indented (a method at its class's indentation) moved to the margin."""
    return at_margin(without_diff_marks(content))


def _merge(result: PatchResult, more: PatchResult) -> PatchResult:
    result.files_changed += [f for f in more.files_changed if f not in result.files_changed]
    result.new_contents.update(more.new_contents)
    result.hunks += list(more.hunks)
    result.diff += more.diff
    return result


class SymbolFormat:
    name = "symbol"
    numbered_context = False
    reads_definitions = True  # a reply cut inside a block keeps its complete definitions (cut_replies.py)

    def instructions(self) -> str:
        return (
            "Edit format: whole functions. For every Python function or class you change, write the file's "
            "path alone on one line, then a code fence with the COMPLETE new version of that function or "
            "class (all of it, from its `def` or `class` line to its last line; a method may be written "
            "alone). Write only what changes; everything else in the file stays as it is. For files that "
            "are not Python, use SEARCH/REPLACE blocks (the path, then `<<<<<<< SEARCH`, exact old lines, "
            "`=======`, new lines, `>>>>>>> REPLACE`).\n"
            "The shape of a reply (placeholders, not real code):\n\n"
            "path/to/module.py\n```python\ndef name_of_the_function(its, arguments):\n"
            "    <its complete corrected body>\n```"
        )

    def parse(self, reply: str) -> list[SymbolEdit | SearchReplace]:
        """Named Python blocks become SymbolEdits (their code as `block_code` reads it); SEARCH/REPLACE
        blocks (any file) are kept as they are."""
        edits: list[SymbolEdit | SearchReplace] = list(parse_search_replace_blocks(reply))
        if edits:
            return edits
        return [SymbolEdit(b.path, block_code(b.content)) for b in named_blocks(reply)
                if b.path.endswith(".py")]

    def apply(self, edits: list, workspace: Workspace, dry_run: bool = False) -> PatchResult:
        """All edits, all or nothing: every new file text is computed before any is written."""
        blocks = [e for e in edits if isinstance(e, SearchReplace)]
        result = apply_search_replace_blocks(workspace, blocks, dry_run=True) if blocks else PatchResult()
        texts: dict[str, str] = {}
        for edit in (e for e in edits if isinstance(e, SymbolEdit)):
            rel = workspace.relpath(edit.path)
            if rel in texts or workspace.exists(rel):
                source = texts.get(rel) or workspace.read_text(rel)
                texts[rel] = replace_symbols(source, edit.code, rel)
            else:  # a new module: its definitions are the whole file
                texts[rel] = edit.code
        for rel, text in texts.items():
            if rel in result.new_contents:
                raise PatchError(f"{rel} was edited both by SEARCH/REPLACE and by whole functions; use one.",
                                 rel)
            _merge(result, write_file(workspace, rel, text, dry_run=True))
        if dry_run:
            return result
        final = apply_search_replace_blocks(workspace, blocks) if blocks else PatchResult()
        for rel, text in texts.items():
            _merge(final, write_file(workspace, rel, text))
        return final

    def counterfactual(self, edits: list, workspace: Workspace) -> str:
        return render(self.apply(edits, workspace, dry_run=True).new_contents)
