"""`search_replace`: SEARCH/REPLACE blocks (aider style); each block names a file, an exact excerpt to find
and its replacement. Parsing and applying are tools.patch's (one parser for every agent)."""

from __future__ import annotations

from deltaserve.harness.formats import whole

NAME = "search_replace"
NUMBERED_CONTEXT = False  # the SEARCH text must match the file, so show it exactly as it is


def instructions() -> str:
    return (
        "Edit format: SEARCH/REPLACE blocks. For each change write the file path on its own line, then a "
        "block: `<<<<<<< SEARCH`, lines copied exactly from the file, `=======`, the new lines, "
        "`>>>>>>> REPLACE`. Keep SEARCH short but unique.\n"
        "Example:\n\n"
        "src/greet.py\n```\n<<<<<<< SEARCH\n    return \"Hello\" + name\n=======\n"
        "    return f\"Hello, {name}!\"\n>>>>>>> REPLACE\n```"
    )


def parse(reply: str) -> list:
    """SearchReplace blocks (tools.patch.SearchReplace: path, search, replace); [] if none."""
    from deltaserve.tools.patch import parse_search_replace_blocks

    return list(parse_search_replace_blocks(reply))


def apply(edits: list, workspace, dry_run: bool = False):
    from deltaserve.tools.patch import apply_search_replace_blocks

    return apply_search_replace_blocks(workspace, edits, dry_run=dry_run)


def counterfactual(edits: list, workspace) -> str:
    return whole.render(apply(edits, workspace, dry_run=True).new_contents)
