"""Early stop: a SEARCH/REPLACE reply streamed from a real model (the tiny one, scripted where the text
matters) is cut at the first SEARCH line that no strategy of the tools could place, and the engine frees the
request; a reply whose lines are there, exactly or loosely, is left alone. Diff hunks alike; a symbol reply
at the first line of its code that no later line could make valid Python, or at a function whose name the
format could not place."""

from __future__ import annotations

import pytest

from deltaserve.harness.client import EARLY_STOP, complete
from deltaserve.harness.early_stop import SearchReplaceWatch, SymbolWatch, UdiffWatch
from deltaserve.tools.hunks import line_could_match

CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
FILES = {"calc.py": CALC}


def watch():
    return SearchReplaceWatch(FILES.get)


def block(search: str, replace: str = "    return a + b\n", path: str = "calc.py") -> str:
    return f"{path}\n```\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


def prefixes(text: str):
    """The text as a stream would show it, a line at a time."""
    lines = text.splitlines(keepends=True)
    return ["".join(lines[:i]) for i in range(1, len(lines) + 1)]


@pytest.mark.parametrize("search", ["    return a - b\n", "  return a - b   \n",  # exact, loose indent
                                    "def add(a, b):\n\n    return a - b\n",  # an extra blank line
                                    "    return a - c\n"])  # close enough for the fuzzy match
def test_a_placeable_block_is_never_stopped(search):
    w = watch()
    assert all(w(p) is None for p in prefixes("Here is the fix:\n" + block(search)))


def test_a_line_the_file_lacks_stops_the_reply_at_that_line():
    w = watch()
    text = block("def add(a, b):\n    total = sum_of_everything(a, b, c, d)\n    return total\n")
    stops = [(p, w(p)) for p in prefixes(text)]
    first = next(i for i, (_, reason) in enumerate(stops) if reason)
    assert stops[first][0].endswith("sum_of_everything(a, b, c, d)\n")
    assert "'total = sum_of_everything(a, b, c, d)' is not in calc.py" in stops[first][1]


def test_a_block_naming_a_missing_file_goes_on_for_the_repairs_to_place():
    assert watch()(block("    return a - b\n", path="path/to/file.py")) is None


def test_a_block_quoting_another_file_in_play_goes_on_for_the_repairs_to_reaim():
    util = "import json\nPAYLOAD = json.dumps({'status': 'ready', 'retries': 3})\n"
    files = {**FILES, "util.py": util}
    quoting_util = block(util)  # names calc.py
    assert SearchReplaceWatch(files.get, ["calc.py", "util.py"])(quoting_util) is None
    assert SearchReplaceWatch(files.get, ["calc.py"])(quoting_util)  # util.py not in play: stopped


def test_a_later_block_may_quote_what_an_earlier_block_wrote():
    first = block("    return a - b\n", "    total = a + b\n    return total\n")
    later = block("    total = a + b\n", "    total = b + a\n")
    w = watch()
    assert all(w(p) is None for p in prefixes(first + later))
    assert watch()(later)  # alone, its line is not in the file


def test_blank_lines_always_could_match():
    assert line_could_match("   ", []) and not line_could_match("x = 1", [])


def test_the_stream_is_closed_and_the_engine_frees_the_request(tiny_llama):
    from deltaserve.engine import Engine
    from deltaserve.harness.client import register_local_engine

    engine = Engine.from_pretrained(str(tiny_llama), dtype="float32", num_blocks=256)
    register_local_engine("tiny-early", engine)
    messages = [{"role": "user", "content": "fix it"}]
    # the tiny model's greedy reply starts with a SEARCH line that is in no file: forced through the
    # edits constraint to a block of a file whose lines it cannot have (a file of other text)
    read = {"calc.py": "completely different text\n"}.get
    edits = {"structured_outputs": {"edits": {"format": "search_replace", "files": {
        "calc.py": "alpha beta gamma\nzeta eta theta\n" * 3}}}}
    full = complete("local/tiny-early", messages, max_tokens=120, extra_body=edits)
    cut = complete("local/tiny-early", messages, max_tokens=120, extra_body=edits,
                   watch=SearchReplaceWatch(read))
    assert cut.finish_reason == EARLY_STOP and "is not in calc.py" in cut.stopped_early
    assert full.text.startswith(cut.text) and len(cut.text) < len(full.text)
    assert engine.stats().blocks_in_use == 0 and not engine.has_unfinished()
    # what the cut reply cost is still known: the prompt's cached tokens (its first run cached the prompt)
    # and the passes decoded until the stop
    assert cut.cached_tokens is not None and cut.cached_tokens > 0
    assert 0 < cut.decode_passes <= full.decode_passes


def diff(*hunk_lines: str, path: str = "calc.py") -> str:
    return f"```diff\n--- a/{path}\n+++ b/{path}\n@@ -1,2 +1,2 @@\n" + "".join(hunk_lines) + "```\n"


@pytest.mark.parametrize("lines", [(" def add(a, b):\n", "-    return a - b\n", "+    return a + b\n"),
                                   ("   def add(a, b):  \n", "-  return a - b\n", "+    return a + b\n"),
                                   ("\n", "-    return a - c\n", "+    return a + b\n")])
def test_a_placeable_hunk_is_never_stopped(lines):
    w = UdiffWatch(FILES.get)
    assert all(w(p) is None for p in prefixes("The fix:\n" + diff(*lines)))


def test_a_diff_line_the_file_lacks_stops_the_reply_at_that_line():
    w = UdiffWatch(FILES.get)
    text = diff(" def add(a, b):\n", "-    total = sum_of_everything(a, b, c, d)\n", "+    return a + b\n")
    stops = [(p, w(p)) for p in prefixes(text)]
    first = next(i for i, (_, reason) in enumerate(stops) if reason)
    assert stops[first][0].endswith("sum_of_everything(a, b, c, d)\n")
    assert "'-    total = sum_of_everything(a, b, c, d)' is not in calc.py" in stops[first][1]
    # an added line is new code: never checked; a file the repairs may find goes on
    added = diff("+    total = sum_of_everything(a, b, c, d)\n", " def add(a, b):\n")
    assert UdiffWatch(FILES.get)(added) is None
    assert UdiffWatch(FILES.get)(diff(" no such line anywhere\n", path="other.py")) is None


SHOP = ("class Cart:\n    def get(self, sku):\n        return self.items[sku]\n\n\n"
        "class Ledger:\n    def get(self, number):\n        return self.cards[number]\n\n\n"
        "def total(cart):\n    return sum(cart.items.values())\n")
SHOP_FILES = {**FILES, "shop.py": SHOP}


def symbol_block(code: str, path: str = "calc.py", closed: bool = True) -> str:
    return f"{path}\n```python\n{code}" + ("```\n" if closed else "")


def first_stop(text: str) -> tuple[str, str] | None:
    """The prefix (whole lines) at which a fresh symbol watch stops the text as it streams, and why."""
    w = SymbolWatch(SHOP_FILES.get)
    return next(((p, why) for p in prefixes(text) if (why := w(p))), None)


@pytest.mark.parametrize("code", [
    "def add(a, b):\n    return a + b\n",
    "def add(a, b):\n    return (a +\n            b)\n",  # a bracket open across lines
    'def add(a, b):\n    """Sum.\n\nOf two.\n    """\n    return a + b\n',  # a docstring's line at column 0
    "    def add(self, a, b):\n        return a + b\n",  # a method written at its class's indentation
    "def add(a, b):\n-    return a - b\n+    return a + b\n",  # diff marks: the format takes them out
    "def add(a, b):\n    return a\n@@ -5,2 +5,2 @@\n def mul(a, b):\n",  # a hunk's header: read as a diff
    "SEARCH\n    return a - b\n=======\n    return a + b\nREPLACE\n",  # SEARCH/REPLACE: the format reads it
    "def add(a, b):\n    if a:\n        return a + b\n    else:\n        return b\n",
    "def add(a, b):\n    x = a + \\\n        b\n    return x\n",  # a backslash continues the line
])
def test_code_that_parses_is_never_stopped(code):
    assert first_stop("The fix:\n" + symbol_block(code)) is None


def test_a_line_no_later_line_can_repair_stops_the_reply_there():
    code = ("class Schema:\n    type: str\n    not: Schema = None\n    then: Schema = None\n\n"
            "    def check(self):\n        return True\n")
    prefix, why = first_stop(symbol_block(code, closed=False))
    assert prefix.endswith("    not: Schema = None\n")
    assert "not valid Python at line 3 of its block (invalid syntax)" in why and "calc.py" in why


def test_a_block_closed_while_its_code_does_not_parse_stops_at_its_fence():
    code = 'def add(a, b):\n    """Sum of a and b.\n    return a + b\n'  # its docstring never closed
    prefix, why = first_stop(symbol_block(code) + "calc.py\n```python\ndef mul(a, b):\n")
    assert prefix.endswith("return a + b\n```\n") and "not valid Python" in why


def test_a_method_written_alone_under_a_name_several_classes_have_stops_at_its_head():
    prefix, why = first_stop(symbol_block("def get(self, number):\n    return None\n", "shop.py"))
    assert prefix.endswith("def get(self, number):\n")
    assert "several methods named 'get' (Cart.get, Ledger.get)" in why and "stopped" in why
    # the same method inside its class, a top-level function or a new name: the format places them
    for code in ("class Ledger:\n    def get(self, number):\n        return None\n",
                 "def total(cart):\n    return 0\n", "def get_card(ledger, number):\n    return None\n"):
        assert first_stop(symbol_block(code, "shop.py")) is None, code
