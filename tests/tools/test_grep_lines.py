"""grep and LineSearch match line by line, exactly as a plain per-line search would: the whole-text search
that rules files out must never drop a line (regexes that see past a line's ends get no such filter), and a
file's lines are numbered as view() numbers them (LF, CRLF, a lone CR inside a line)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from deltaserve.tools.files import LineSearch, grep
from deltaserve.tools.textfile import split_lines

# Each is a way a line can match alone but not inside its file, or an ordinary pattern.
PATTERNS = [
    r"\Aab", r"b\Z", r"a(?!\s)", r"(?<!\s)b", r"(?<!\n)a", r"(?>a+)$", r"[ab]*+$", r"a++b",
    r"^a", r"b$", r"a\s*$", r"^\s+b", r"ab|ba", r"(?<=a)b", r"a(?=\n)", r"a\b", r"\Bb", r"[^a]*$",
]
texts = st.lists(st.text(alphabet="ab \t\r", max_size=8), max_size=6).map("\n".join)


def naive(files: dict[str, str], pattern: str) -> list[tuple[str, int, str]]:
    rx = re.compile(pattern)
    return [(path, i, line) for path in sorted(files) for i, line in enumerate(split_lines(files[path])[0], 1)
            if rx.search(line)]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(PATTERNS), st.lists(texts, min_size=1, max_size=3))
def test_line_search_finds_what_a_per_line_search_finds(tmp_path_factory, pattern, contents):
    from deltaserve.tools.workspace import Workspace

    root = tmp_path_factory.mktemp("ls")
    files = {f"f{i}.txt": text for i, text in enumerate(contents)}
    for name, text in files.items():
        (root / name).write_bytes(text.encode())
    found = [(h.path, h.number, h.line) for h in LineSearch(Workspace(root), re.compile(pattern))]
    assert found == naive(files, pattern)


def test_crlf_and_lone_cr_lines(workspace):
    ws = workspace({"a.txt": b"one\r\ntwo x\r\nthree\rx\n", "b.txt": b"no newline at the end x"})
    assert grep(ws, r"x$") == "a.txt:2: two x\na.txt:3: three\rx\nb.txt:1: no newline at the end x"
    assert grep(ws, r"^three") == "a.txt:3: three\rx"


@given(st.text(alphabet="a\r\n", max_size=12))
def test_split_lines_splits_at_lf_and_crlf_only(text):
    lines, endings = split_lines(text)
    assert "".join(line + end for line, end in zip(lines, endings, strict=True)) == text
    assert "\n" not in "".join(lines)
    assert all(end in ("\n", "\r\n") for end in endings[:-1])
    assert (endings[-1:] == [""]) == (bool(text) and not text.endswith("\n"))
    # a CR before LF belongs to the terminator, whatever precedes it
    assert all(not line.endswith("\r") for line, end in zip(lines, endings, strict=True) if end == "\n")
