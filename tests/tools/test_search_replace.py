"""SEARCH/REPLACE blocks (parsing and applying) and whole-file writes."""

from __future__ import annotations

import os

import pytest

from deltaserve.errors import NoChangesError
from deltaserve.tools.patch import (
    PatchError,
    SearchReplace,
    apply_search_replace,
    apply_search_replace_blocks,
    parse_search_replace_blocks,
    write_file,
)

CALC = "import math\n\n\ndef add(a, b):\n    return a - b\n\n\ndef area(r):\n    return math.pi * r * r\n"

REPLY = """I'll fix `add` and add a test.

calc.py
```python
<<<<<<< SEARCH
def add(a, b):
    return a - b
=======
def add(a, b):
    return a + b
>>>>>>> REPLACE
```

And the circle area should use `r ** 2`:

```python
<<<<<<< SEARCH
    return math.pi * r * r
=======
    return math.pi * r ** 2
>>>>>>> REPLACE
```

tests/test_calc.py
```python
<<<<<<< SEARCH
=======
from calc import add


def test_add():
    assert add(1, 2) == 3
>>>>>>> REPLACE
```
"""


def test_parse_reply_with_prose_and_fences():
    blocks = parse_search_replace_blocks(REPLY)
    assert [b.path for b in blocks] == ["calc.py", "calc.py", "tests/test_calc.py"]
    assert blocks[0] == SearchReplace(
        "calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n"
    )
    assert blocks[2].search == ""
    assert blocks[2].replace.startswith("from calc import add\n")


def test_block_without_filename_continues_previous_file():
    text = (
        "calc.py\n```\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n\nThen this:\n```\n"
        "<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE\n```\n\nutil.py\n```\n<<<<<<< SEARCH\ne\n=======\n"
        ">>>>>>> REPLACE\n```\n"
    )
    assert [(b.path, b.search, b.replace) for b in parse_search_replace_blocks(text)] == [
        ("calc.py", "a\n", "b\n"), ("calc.py", "c\n", "d\n"), ("util.py", "e\n", "")]


def test_apply_reply(workspace):
    ws = workspace({"calc.py": CALC})
    res = apply_search_replace_blocks(ws, parse_search_replace_blocks(REPLY))
    assert res.files_changed == ["calc.py", "tests/test_calc.py"]
    assert (ws.root / "calc.py").read_text() == CALC.replace("a - b", "a + b").replace("r * r", "r ** 2")
    assert (ws.root / "tests/test_calc.py").read_text().endswith("assert add(1, 2) == 3\n")
    assert [h.strategy for h in res.hunks] == ["exact", "exact", "create"]


def test_several_blocks_in_one_fence_share_the_filename():
    text = "calc.py\n```\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nc\n=======\nd\n" \
           ">>>>>>> REPLACE\n```\n"
    assert [b.path for b in parse_search_replace_blocks(text)] == ["calc.py", "calc.py"]


@pytest.mark.parametrize("text,msg", [
    ("calc.py\n<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n", "no ======= line"),
    ("calc.py\n<<<<<<< SEARCH\na\n=======\nb\n", "not closed"),
    # a heading's underline in the text (replayed jinja, marshmallow and werkzeug docs commits)
    ("index.rst\n<<<<<<< SEARCH\nAPI\n=======\nold\n=======\nAPI\n=======\nnew\n>>>>>>> REPLACE\n",
     "more than one ======= line"),
    ("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", "no file name"),
])
def test_parse_errors(text, msg):
    with pytest.raises(PatchError, match=msg):
        parse_search_replace_blocks(text)


def test_whitespace_and_indent_tolerance(workspace):
    ws = workspace({"m.py": "class A:\n    def f(self):   \n        return 1\n"})
    # The model dropped the class indentation and the trailing spaces.
    res = apply_search_replace(ws, "m.py", "def f(self):\n    return 1\n", "def f(self):\n    return 2\n")
    assert res.hunks[0].strategy == "indent"
    assert (ws.root / "m.py").read_text() == "class A:\n    def f(self):   \n        return 2\n"


def test_a_search_that_is_part_of_one_line_edits_that_line(workspace):
    """Small models quote the call they change, not its line: `self._lookup(key)` out of
    `value = self._lookup(key)`. Found once, it is replaced in place and the rest of the line stays."""
    ws = workspace({"p.py": "def get(self, key):\n    value = self._lookup(key)\n    return value\n"})
    res = apply_search_replace(ws, "p.py", "self._lookup(key)\n", "self._lookup(key, default=None)\n")
    assert res.hunks[0].strategy == "in-line" and res.hunks[0].start_line == 2
    fixed = "def get(self, key):\n    value = self._lookup(key, default=None)\n    return value\n"
    assert (ws.root / "p.py").read_text() == fixed


@pytest.mark.parametrize(("text", "search"), [
    ("a = f(x)\nb = f(x)\n", "f(x)"),  # twice: which one is meant is unknown
    ("max = 10\n", "x = 1"),  # inside longer names only
    ("a = f(x)\n", "f(x)\nb = 2"),  # more than one line: hunks rules apply
])
def test_a_line_fragment_that_is_not_unique_or_splits_a_name_is_refused(workspace, snapshot, text, search):
    ws = workspace({"p.py": text})
    before = snapshot(ws.root)
    with pytest.raises(PatchError, match="not found|match 2 places|has only 1"):
        apply_search_replace(ws, "p.py", search + "\n", "g(y)\n")
    assert snapshot(ws.root) == before


def test_zero_and_many_matches_name_lines(workspace, snapshot):
    ws = workspace({"d.py": "x = 1\ny = 2\nx = 1\n"})
    before = snapshot(ws.root)
    with pytest.raises(PatchError) as exc:
        apply_search_replace(ws, "d.py", "x = 1\n", "x = 3\n")
    assert "match 2 places (starting at lines 1, 3)" in exc.value.message
    with pytest.raises(PatchError) as exc:
        apply_search_replace(ws, "d.py", "z = 9\nw = 8\n", "z = 0\n")
    assert "not found" in exc.value.message and "Closest lines in d.py" in exc.value.message
    assert "SEARCH/REPLACE block 1" in exc.value.message
    assert snapshot(ws.root) == before


def test_blocks_are_all_or_nothing_and_sequential(workspace, snapshot):
    ws = workspace({"a.py": "A = 1\n", "b.py": "B = 1\n"})
    before = snapshot(ws.root)
    blocks = [SearchReplace("a.py", "A = 1\n", "A = 2\n"), SearchReplace("b.py", "nope\n", "B = 2\n")]
    with pytest.raises(PatchError, match="block 2"):
        apply_search_replace_blocks(ws, blocks)
    assert snapshot(ws.root) == before
    # A later block sees an earlier block's result.
    res = apply_search_replace_blocks(ws, [SearchReplace("a.py", "A = 1\n", "A = 2\n"),
                                           SearchReplace("a.py", "A = 2\n", "A = 3\n")])
    assert (ws.root / "a.py").read_text() == "A = 3\n"
    assert res.new_contents == {"a.py": "A = 3\n"}


def test_blocks_that_repeat_their_search_are_no_changes_even_when_misquoted(workspace, snapshot):
    """A 1.5B reply re-typed a function with its indentation lost in both halves: "copy the lines exactly"
    would have sent the model after the quoting, not after the missing change."""
    ws = workspace({"a.py": "def f():\n    return 1\n"})
    before = snapshot(ws.root)
    for search in ("def f():\nreturn 1\n", "def f():\n    return 1\n"):
        with pytest.raises(NoChangesError, match="have no changes") as exc:
            apply_search_replace_blocks(ws, [SearchReplace("a.py", search, search)])
        assert exc.value.paths == ["a.py"]
    # beside a real change, a misquoted block is still "not found"
    with pytest.raises(PatchError, match="not found"):
        apply_search_replace_blocks(ws, [SearchReplace("a.py", "nope\n", "nope\n"),
                                         SearchReplace("a.py", "gone\n", "x = 1\n")])
    assert snapshot(ws.root) == before


def test_empty_search_on_existing_file_is_refused(workspace):
    ws = workspace({"a.py": "A = 1\n"})
    with pytest.raises(PatchError, match="empty SEARCH"):
        apply_search_replace(ws, "a.py", "", "B = 1\n")


def test_missing_file_suggests_similar(workspace):
    ws = workspace({"pkg/calc.py": CALC})
    with pytest.raises(PatchError, match="Did you mean: pkg/calc.py"):
        apply_search_replace(ws, "calc.py", "import math\n", "import cmath\n")


def test_crlf_file_and_escape(workspace):
    ws = workspace({"w.txt": b"one\r\ntwo\r\n"})
    apply_search_replace(ws, "w.txt", "two\n", "TWO\nthree\n")
    assert (ws.root / "w.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    with pytest.raises(PatchError, match="'..'"):
        apply_search_replace(ws, "../x.txt", "", "evil\n")


def test_write_file_keeps_style_and_mode(workspace):
    ws = workspace({"run.sh": b"#!/bin/sh\r\necho a\r\n", "nofinal.txt": "x\ny"})
    os.chmod(ws.root / "run.sh", 0o750)
    dry = write_file(ws, "run.sh", "#!/bin/sh\necho b\n", dry_run=True)
    assert dry.new_contents == {"run.sh": "#!/bin/sh\r\necho b\r\n"}
    assert (ws.root / "run.sh").read_bytes() == b"#!/bin/sh\r\necho a\r\n"
    write_file(ws, "run.sh", "#!/bin/sh\necho b\n")
    assert (ws.root / "run.sh").read_bytes() == b"#!/bin/sh\r\necho b\r\n"
    assert (ws.root / "run.sh").stat().st_mode & 0o777 == 0o750
    write_file(ws, "nofinal.txt", "x\nz\n")
    assert (ws.root / "nofinal.txt").read_text() == "x\nz"
    res = write_file(ws, "new/dir/file.txt", "hello")
    assert (ws.root / "new/dir/file.txt").read_text() == "hello\n"
    assert res.files_changed == ["new/dir/file.txt"]
    with pytest.raises(PatchError, match=".git"):
        write_file(ws, ".git/hooks/pre-commit", "evil")


TWINS = "def first():\n    x = compute()\n    return x\n\n\ndef second():\n    x = compute()\n    return x\n"


def test_a_block_matching_several_places_is_placed_by_its_files_other_blocks(workspace):
    """Blocks written top to bottom: `return x` after second's docstring is second's (replayed real commits
    hit this in test files of alike cases; `deltaserve bench replay`)."""
    ws = workspace({"d.py": TWINS, "other.py": "A = 1\n"})
    res = apply_search_replace_blocks(ws, [
        SearchReplace("d.py", "def second():\n", "def second():\n    \"\"\"Again.\"\"\"\n"),
        SearchReplace("other.py", "A = 1\n", "A = 2\n"),  # another file between them changes nothing
        SearchReplace("d.py", "    x = compute()\n    return x\n", "    x = compute()\n    return -x\n"),
    ])
    assert (ws.root / "d.py").read_text() == TWINS.replace(
        "def second():\n    x = compute()\n    return x", "def second():\n    \"\"\"Again.\"\"\"\n"
        "    x = compute()\n    return -x")
    assert (ws.root / "other.py").read_text() == "A = 2\n"
    assert [(h.file, h.index, h.start_line) for h in res.hunks if h.file == "d.py"] == [("d.py", 0, 6),
                                                                                        ("d.py", 1, 7)]


@pytest.mark.parametrize("blocks", [
    # the ambiguous block is the last, after both places: no order tells them apart
    [SearchReplace("d.py", "def first():\n", "def first():  # one\n"),
     SearchReplace("d.py", "    return x\n", "    return 0\n")],
    # the second block edits what the first wrote: they cannot be placed together on the old file
    [SearchReplace("d.py", "def second():\n", "def second():\n    y = 1\n"),
     SearchReplace("d.py", "    y = 1\n    x = compute()\n", "    y = 2\n    x = compute()\n"),
     SearchReplace("d.py", "    return x\n", "    return 0\n")],
])
def test_an_ambiguous_block_its_neighbours_cannot_place_is_refused(workspace, snapshot, blocks):
    ws = workspace({"d.py": TWINS})
    before = snapshot(ws.root)
    with pytest.raises(PatchError, match="match 2 places"):
        apply_search_replace_blocks(ws, blocks)
    assert snapshot(ws.root) == before


def test_a_makefile_named_alone_before_its_block_is_its_file():
    reply = ("calc.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```\n\n"
             "Makefile\n```\n<<<<<<< SEARCH\nall: build\n=======\nall: build test\n>>>>>>> REPLACE\n```\n")
    assert [b.path for b in parse_search_replace_blocks(reply)] == ["calc.py", "Makefile"]
