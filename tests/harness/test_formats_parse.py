"""Each format finds its edits inside prose and code fences, and finds none in plain prose."""

import pytest

from deltaserve.harness import formats
from deltaserve.harness.formats.udiff import UdiffFormat
from deltaserve.harness.formats.whole import WholeFile, WholeFormat, render

udiff, whole = formats.get("udiff"), formats.get("whole")

DIFF = "--- a/src/m.py\n+++ b/src/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1\n"


def test_registry_by_name():
    assert formats.names() == ["udiff", "search_replace", "symbol", "whole", "auto"]
    assert isinstance(formats.get("udiff"), UdiffFormat)
    assert formats.get("whole").name == "whole"
    assert all(isinstance(formats.get(name), formats.EditFormat) for name in formats.names())
    with pytest.raises(ValueError, match="known: udiff"):
        formats.get("nope")


class NotAFormat:  # a name and instructions, but nothing to parse or apply edits with
    name = "bad"

    def instructions(self) -> str:
        return "write anything"


class WholeAgain(WholeFormat):
    name = "whole2"


class NeedsArguments(WholeFormat):
    name = "configured"

    def __init__(self, fence: str):
        self.fence = fence


def test_register_checks_shape(monkeypatch):
    monkeypatch.setattr(formats, "_REGISTRY", dict(formats._REGISTRY))  # the registry is process-wide
    with pytest.raises(ValueError, match="missing numbered_context, parse, apply, counterfactual"):
        formats.register(NotAFormat)
    with pytest.raises(ValueError, match="register an instance"):
        formats.register(NeedsArguments)
    assert "bad" not in formats.names() and "configured" not in formats.names()
    formats.register(WholeAgain)
    assert isinstance(formats.get("whole2"), WholeAgain)
    configured = NeedsArguments("~~~")
    assert formats.register(configured) is configured and formats.get("configured") is configured


@pytest.mark.parametrize("reply", [
    f"Here is the fix:\n```diff\n{DIFF}```\nThis adds one.",
    f"```\n{DIFF}```",
    f"Sure.\n\n{DIFF}\nThat should do it.",
    f"{DIFF}",
    f"```patch\n{DIFF}```\n\nAnd some prose after.\n",
])
def test_udiff_parse_tolerates_prose_and_fences(reply):
    assert udiff.parse(reply) == [DIFF]


def test_udiff_parse_several_fenced_diffs_and_ignores_other_code():
    other = DIFF.replace("src/m.py", "src/n.py")
    reply = f"```python\nprint('not a diff')\n```\n```diff\n{DIFF}```\nthen\n```diff\n{other}```"
    assert udiff.parse(reply) == [DIFF, other]


MARKDOWN_DIFF = ("--- a/docs/usage.md\n+++ b/docs/usage.md\n@@ -3,5 +3,5 @@\n ```python\n-run(1)\n+run(2)\n"
                 " ```\n \n-Done.\n+Done!\n")


def test_udiff_parse_keeps_a_code_fence_context_line_inside_the_diff():
    """A Markdown file's (or a docstring's) " ```" is a context line of the diff, not the fence's end
    (replayed real commits of click's docs were cut there and applied in part); an indented fence still
    works."""
    assert udiff.parse(f"```diff\n{MARKDOWN_DIFF}```\n") == [MARKDOWN_DIFF]
    assert udiff.parse(f"1. The fix:\n\n   ```diff\n{DIFF}   ```\n") == [DIFF]


@pytest.mark.parametrize("reply", ["", "I think the bug is in f.", "```python\nx = 1\n```"])
def test_udiff_parse_finds_nothing(reply):
    assert udiff.parse(reply) == []


@pytest.mark.parametrize("reply", [
    "src/m.py\n```python\ndef f(x):\n    return x + 1\n```",
    "Here is the whole file.\n\n**src/m.py**\n```\ndef f(x):\n    return x + 1\n```\nDone.",
    "File: src/m.py\n\n```py\ndef f(x):\n    return x + 1\n```",
    "`src/m.py`:\n```\ndef f(x):\n    return x + 1\n```",
])
def test_whole_parse_tolerates_prose_and_fences(reply):
    assert whole.parse(reply) == [WholeFile("src/m.py", "def f(x):\n    return x + 1\n")]


def test_whole_parse_ignores_unnamed_blocks_and_keeps_several_files():
    reply = ("Explanation:\n```\nnot a file\n```\na.py\n```\nA = 1\n```\n\npkg/b.txt\n```\nhello\n```")
    assert whole.parse(reply) == [WholeFile("a.py", "A = 1\n"), WholeFile("pkg/b.txt", "hello\n")]


def test_whole_render_then_parse_round_trips_even_with_fences_inside():
    files = {"README.md": "# T\n```\ncode\n```\n", "a.py": "x = 1"}
    rendered = render(files)
    assert "````" in rendered  # a longer fence around a file that contains ```
    assert whole.parse(rendered) == [WholeFile("README.md", files["README.md"]), WholeFile("a.py", "x = 1\n")]


def test_whole_render_skips_deleted_files():
    assert render({"gone.py": None, "a.py": "x\n"}) == "a.py\n```\nx\n```"


@pytest.mark.parametrize("name", formats.names())
def test_instructions_are_short_and_their_example_cannot_be_taken_for_an_answer(name):
    """Small models copy a realistic example back as their edit: the shape is shown on a placeholder path
    with placeholder lines instead."""
    text = formats.get(name).instructions()
    limit = 900 * (len(formats.names()) - 1 if name == "auto" else 1)  # `auto` describes every format
    assert "placeholders" in text and "path/to/" in text and "<" in text and len(text) < limit


def test_whole_and_symbol_parse_keep_a_docstrings_markdown_example():
    """A docstring's indented " ```" is the file's text, not the reply's closing fence (which cut the file
    there: a whole-file reply would have truncated it)."""
    code = ('def get(url):\n    """Fetch.\n\n    ```python\n    get("https://example.org")\n    ```\n'
            '    """\n    return url\n')
    reply = f"src/api.py\n```python\n{code}```\n\nThat is all.\n"
    assert whole.parse(reply) == [WholeFile("src/api.py", code)]
    assert [e.code for e in formats.get("symbol").parse(reply)] == [code]


def test_udiff_parse_splits_lines_at_newlines_only():
    """A form feed (a ^L page break in a source file) or a \\u2028 inside a diff line is that line's text
    (str.splitlines split the line there, and the hunk no longer matched)."""
    diff = "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n import os\n \x0c\n-X = 'a\u2028b'\n+X = 'c'\n"
    assert udiff.parse(f"```diff\n{diff}```\n") == [diff]
    assert udiff.parse(f"The fix:\n\n{diff}") == [diff]
