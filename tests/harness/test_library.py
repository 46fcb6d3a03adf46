"""harness.library: parse (one type for every format), apply (all or nothing) and price a reply, no model."""

import pytest

from deltaserve.errors import PatchError
from deltaserve.harness import ParsedReply, SkippedBlock, TokenCounter, apply, formats, parse, price
from deltaserve.harness.accounting import whole_file_tokens
from deltaserve.harness.formats.symbol import SymbolEdit
from deltaserve.harness.formats.whole import WholeFile
from deltaserve.tools.patch import SearchReplace
from tests.conftest import BUGGY

SEARCH_REPLACE = ("calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n"
                  ">>>>>>> REPLACE\n```\n")
UDIFF = ("```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
         "+    return a + b\n```\n")
SYMBOL = "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n"
WHOLE = "calc.py\n```python\n" + BUGGY.replace("a - b", "a + b") + "```\n"
EXAMPLE = "For instance:\n\n```python\nadd(2, 3)\n```\n\n"
FIXED = BUGGY.replace("a - b", "a + b")


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize(("fmt", "reply", "kind", "read_as"), [
    ("search_replace", SEARCH_REPLACE, SearchReplace, "search_replace"),
    ("udiff", UDIFF, str, "udiff"),
    ("symbol", SYMBOL, SymbolEdit, "symbol"),
    ("whole", WHOLE, WholeFile, "whole"),
    ("auto", SEARCH_REPLACE, SearchReplace, "search_replace"),
    ("auto", UDIFF, str, "udiff"),
    ("auto", SYMBOL, SymbolEdit, "symbol"),
])
def test_every_format_parses_into_one_type_and_applies(project, fmt, reply, kind, read_as):
    parsed = parse(reply, fmt)
    assert isinstance(parsed, ParsedReply)
    assert parsed.format == read_as and parsed.files == ("calc.py",) and parsed.skipped == ()
    assert len(parsed.edits) == 1 and isinstance(parsed.edits[0], kind) and parsed.text == reply
    assert apply(parsed, project).files_changed == ["calc.py"]
    assert (project / "calc.py").read_text() == FIXED


def test_a_format_object_parses_too(project):
    parsed = parse(SEARCH_REPLACE, formats.get("search_replace"))
    assert parsed.format == "search_replace" and apply(parsed, str(project)).files_changed == ["calc.py"]


def test_code_blocks_that_hold_no_edit_are_listed_with_why():
    parsed = parse(EXAMPLE + SEARCH_REPLACE, "search_replace")
    assert len(parsed.edits) == 1
    assert parsed.skipped == (SkippedBlock(3, "add(2, 3)", parsed.skipped[0].reason),)
    assert "SEARCH/REPLACE" in parsed.skipped[0].reason
    unnamed = parse(EXAMPLE, "whole")
    assert unnamed.edits == () and unnamed.files == () and "names no file" in unnamed.skipped[0].reason
    assert "Python" in parse("notes.md\n```\nhi\n```\n", "symbol").skipped[0].reason
    assert "any format" in parse(EXAMPLE, "auto").skipped[0].reason


def test_a_diff_names_every_file_it_edits():
    diff = ("```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,1 @@\n-x\n+y\n--- a/util.py\n+++ b/util.py\n"
            "@@ -1,1 +1,1 @@\n-x\n+y\n--- a/gone.py\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n```\n")
    assert parse(diff, "udiff").files == ("calc.py", "util.py", "gone.py")
    bare = UDIFF.replace("```diff\n", "").replace("```\n", "")
    assert parse(bare, "udiff").files == ("calc.py",)


def test_apply_is_all_or_nothing(project):
    second = SEARCH_REPLACE.replace("return a - b", "return a ** b")
    parsed = parse(SEARCH_REPLACE + "\n" + second, "search_replace")
    assert len(parsed.edits) == 2
    with pytest.raises(PatchError) as err:
        apply(parsed, project)
    assert err.value.message and (project / "calc.py").read_text() == BUGGY


def test_no_edits_apply_to_nothing(project):
    assert apply(parse("Looks fine to me."), project).files_changed == []


def test_price_counts_the_reply_and_the_whole_file_reply_and_writes_nothing(project):
    parsed = parse(EXAMPLE + SYMBOL)
    cost = price(parsed, project, words)
    assert cost.edit_tokens == words(EXAMPLE + SYMBOL)
    assert cost.whole_file_tokens == whole_file_tokens({"calc.py": FIXED}, words)
    assert cost.decode_saved == cost.whole_file_tokens - cost.edit_tokens
    assert (project / "calc.py").read_text() == BUGGY


def test_price_of_no_edits_saves_nothing(project):
    cost = price(parse("No change needed."), project, words)
    assert cost.whole_file_tokens == 0 and cost.decode_saved == -cost.edit_tokens


def test_price_of_edits_that_do_not_apply_raises(project):
    with pytest.raises(PatchError):
        price(parse(SEARCH_REPLACE.replace("a - b", "a // b", 1)), project, words)


def test_price_takes_a_model_name_for_its_tokenizer(project):
    parsed = parse(SYMBOL)
    by_name = price(parsed, project, "smollm2-135m")
    assert by_name == price(parsed, project, TokenCounter("local/smollm2-135m"))
