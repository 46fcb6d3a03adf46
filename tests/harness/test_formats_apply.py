"""Formats applied through the real tools.patch on real files: new content, counterfactual, all-or-nothing."""

import pytest

from deltaserve.harness import formats
from deltaserve.harness.formats.whole import WholeFile, render
from deltaserve.tools.patch import PatchError
from deltaserve.tools.workspace import Workspace

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIXED = SOURCE.replace("return a - b", "return a + b", 1)

REPLIES = {
    "udiff": "The sign is wrong.\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
             "-    return a - b\n+    return a + b\n```\n",
    "search_replace": "Fix:\ncalc.py\n```python\n<<<<<<< SEARCH\ndef add(a, b):\n    return a - b\n=======\n"
                      "def add(a, b):\n    return a + b\n>>>>>>> REPLACE\n```\n",
    "symbol": "The sign in add is wrong:\n\ncalc.py\n```python\ndef add(a, b):\n    return a + b\n```\n",
    "whole": f"calc.py\n```python\n{FIXED}```\n",
}
REPLIES["auto"] = REPLIES["udiff"]  # `auto` reads any format's syntax


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "calc.py").write_text(SOURCE)
    return Workspace(tmp_path)


@pytest.mark.parametrize("name", formats.names())
def test_apply_and_counterfactual(name, ws):
    fmt = formats.get(name)
    edits = fmt.parse(REPLIES[name])
    assert edits
    expected_counterfactual = f"calc.py\n```\n{FIXED}```"
    assert fmt.counterfactual(edits, ws) == expected_counterfactual
    preview = fmt.apply(edits, ws, dry_run=True)
    assert preview.new_contents == {"calc.py": FIXED}
    assert (ws.root / "calc.py").read_text() == SOURCE  # dry run wrote nothing
    result = fmt.apply(edits, ws)
    assert result.files_changed == ["calc.py"] and (ws.root / "calc.py").read_text() == FIXED
    assert render(result.new_contents) == expected_counterfactual


@pytest.mark.parametrize("name", ["udiff", "search_replace"])
def test_failed_apply_raises_with_closest_lines_and_writes_nothing(name, ws):
    fmt = formats.get(name)
    bad = REPLIES[name].replace("return a - b", "return a * b")
    with pytest.raises(PatchError) as info:
        fmt.apply(fmt.parse(bad), ws)
    assert "calc.py" in info.value.message
    assert (ws.root / "calc.py").read_text() == SOURCE


def test_udiff_without_headers_is_left_to_the_tools_parser(ws):
    reply = "calc.py\n```diff\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n```\n"
    edits = formats.get("udiff").parse(reply)
    assert edits == [reply]
    assert formats.get("udiff").apply(edits, ws, dry_run=True).new_contents == {"calc.py": FIXED}


def test_whole_checks_every_path_before_writing(ws):
    whole = formats.get("whole")
    edits = [WholeFile("new.py", "x = 1\n"), WholeFile("../escape.py", "x = 2\n")]
    with pytest.raises(PatchError):
        whole.apply(edits, ws)
    assert not (ws.root / "new.py").exists()


def test_whole_multi_file_result(ws):
    whole = formats.get("whole")
    result = whole.apply([WholeFile("calc.py", FIXED), WholeFile("pkg/new.py", "x = 1\n")], ws)
    assert result.files_changed == ["calc.py", "pkg/new.py"]
    assert (ws.root / "pkg/new.py").read_text() == "x = 1\n"
    # re-sending the files as they now are changes nothing, so there is nothing to carry
    assert whole.counterfactual(whole.parse(render(result.new_contents)), ws) == ""


def test_udiff_applies_a_diff_through_a_page_break_and_a_crlf_reply_alike(tmp_path):
    (tmp_path / "m.py").write_text("import os\n\x0c\ndef f():\n    return 1\n")
    udiff = formats.get("udiff")
    reply = ("```diff\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@\n import os\n \x0c\n def f():\n"
             "-    return 1\n+    return 2\n```\n")
    for text in (reply, reply.replace("\n", "\r\n")):
        preview = udiff.apply(udiff.parse(text), Workspace(tmp_path), dry_run=True)
        assert preview.new_contents == {"m.py": "import os\n\x0c\ndef f():\n    return 2\n"}


def test_a_symbol_method_written_at_its_classs_indentation_is_read_at_the_margin(tmp_path):
    # what the symbol grammar allows (a method alone, indented) the format applies: a model copies a method
    # as the file shows it
    (tmp_path / "shop.py").write_text("class Cart:\n    def total(self):\n        return 0\n")
    fmt = formats.get("symbol")
    method = '    def total(self):\n        """Sum.\n\n        Of all."""\n        return 1\n'
    reply = f"shop.py\n```python\n{method}```\n"
    assert fmt.apply(fmt.parse(reply), Workspace(tmp_path), dry_run=True).new_contents == {
        "shop.py": f"class Cart:\n{method}"}
