"""The reply's shape, restated at the end of every prompt with the real path of the file in play.

A format's instructions sit at the top of the prompt (the system message). A small model that read them
thousands of tokens earlier copies their placeholder example back (Qwen2.5-Coder-1.5B answered a whole-file
request with `path/to/file.py` and an empty fence, prediction or not) or drops the markers. One sentence at
the end, naming the file to edit, costs a few prompt tokens and no cache: the tail of a prompt is new anyway.
"""

from __future__ import annotations

SHAPES = {
    "whole": "{path} alone on one line, then a code fence holding every line of the corrected file",
    "symbol": "{path} alone on one line, then a ```python fence holding the complete corrected version of "
              "each function or class you change",
    "search_replace": "{path} alone on one line, then a code fence holding <<<<<<< SEARCH, the exact current "
                      "lines to change, =======, their corrected version, and >>>>>>> REPLACE",
    "udiff": "a ```diff fence holding --- a/{path} and +++ b/{path}, then @@ hunks whose unchanged and - "
             "lines are exact current lines",
}


def reminder(format_name: str, path: str | None) -> str:
    """One sentence: the shape of a reply in `format_name` editing `path` ("" for a format without one, or
    no file)."""
    if format_name == "symbol" and path is not None and not path.endswith(".py"):
        shape = SHAPES["search_replace"]  # symbol edits other languages with SEARCH/REPLACE
    else:
        shape = SHAPES.get(format_name)
    if shape is None or path is None:
        return ""
    return f"Reply with {shape.format(path=path)}."
