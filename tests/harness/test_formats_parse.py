"""Each format finds its edits inside prose and code fences, and finds none in plain prose."""

import pytest

from deltaserve.harness import formats
from deltaserve.harness.formats import udiff, whole

DIFF = "--- a/src/m.py\n+++ b/src/m.py\n@@ -1,2 +1,2 @@\n def f(x):\n-    return x\n+    return x + 1\n"


def test_registry_by_name():
    assert formats.names() == ["udiff", "search_replace", "whole"]
    assert formats.get("udiff") is udiff
    assert formats.get("whole").NAME == "whole"
    with pytest.raises(ValueError, match="known: udiff"):
        formats.get("nope")


def test_register_checks_shape(monkeypatch):
    monkeypatch.setattr(formats, "_MODULES", dict(formats._MODULES))  # the registry is process-wide: restore it
    with pytest.raises(ValueError, match="missing"):
        formats.register("bad", "deltaserve.harness.prompt")
    assert "bad" not in formats.names()
    formats.register("whole2", "deltaserve.harness.formats.whole")
    assert formats.get("whole2") is whole


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
    assert whole.parse(reply) == [whole.WholeFile("src/m.py", "def f(x):\n    return x + 1\n")]


def test_whole_parse_ignores_unnamed_blocks_and_keeps_several_files():
    reply = ("Explanation:\n```\nnot a file\n```\na.py\n```\nA = 1\n```\n\npkg/b.txt\n```\nhello\n```")
    assert whole.parse(reply) == [whole.WholeFile("a.py", "A = 1\n"), whole.WholeFile("pkg/b.txt", "hello\n")]


def test_whole_render_then_parse_round_trips_even_with_fences_inside():
    files = {"README.md": "# T\n```\ncode\n```\n", "a.py": "x = 1"}
    rendered = whole.render(files)
    assert "````" in rendered  # a longer fence around a file that contains ```
    assert whole.parse(rendered) == [whole.WholeFile("README.md", files["README.md"]), whole.WholeFile("a.py", "x = 1\n")]


def test_whole_render_skips_deleted_files():
    assert whole.render({"gone.py": None, "a.py": "x\n"}) == "a.py\n```\nx\n```"


@pytest.mark.parametrize("name", formats.names())
def test_instructions_are_short_and_have_an_example(name):
    text = formats.get(name).instructions()
    assert "Example" in text and len(text) < 800
