"""`search_replace`: SEARCH/REPLACE blocks (aider style); each block names a file, an exact excerpt to find
and its replacement. Parsing and applying are tools.patch's (one parser for every agent)."""

from __future__ import annotations

from deltaserve.harness.formats.whole import render
from deltaserve.tools.patch import (
    PatchResult,
    SearchReplace,
    apply_search_replace_blocks,
    parse_search_replace_blocks,
)
from deltaserve.tools.workspace import Workspace


class SearchReplaceFormat:
    name = "search_replace"
    numbered_context = False  # the SEARCH text must match the file, so show it exactly as it is

    def instructions(self) -> str:
        return (
            "Edit format: SEARCH/REPLACE blocks. For each change write the file path on its own line, then a "
            "block: `<<<<<<< SEARCH`, lines copied exactly from the file, `=======`, the new lines, "
            "`>>>>>>> REPLACE`. Keep SEARCH short but unique.\n"
            "The shape of a reply (placeholders, not real code):\n\n"
            "path/to/file.py\n```\n<<<<<<< SEARCH\n<the old lines, exactly as in the file>\n=======\n"
            "<the new lines>\n>>>>>>> REPLACE\n```"
        )

    def parse(self, reply: str) -> list[SearchReplace]:
        """SearchReplace blocks (path, search, replace); [] if none."""
        return list(parse_search_replace_blocks(reply))

    def apply(self, edits: list[SearchReplace], workspace: Workspace, dry_run: bool = False) -> PatchResult:
        return apply_search_replace_blocks(workspace, edits, dry_run=dry_run)

    def counterfactual(self, edits: list[SearchReplace], workspace: Workspace) -> str:
        return render(self.apply(edits, workspace, dry_run=True).new_contents)
