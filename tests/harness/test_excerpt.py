"""Excerpts of long files: the code the failing tests reach, fold markers with true line numbers, and the
edits that would drop what was folded."""

from deltaserve.errors import ReplyRejected
from deltaserve.harness import context, edit_checks, excerpt
from deltaserve.harness.config import AgentConfig
from deltaserve.harness.prompt import render_file
from deltaserve.harness.python_refs import defines_code
from deltaserve.harness.trial import Context, Draft
from deltaserve.tools.patch import write_file
from deltaserve.tools.workspace import Workspace

FILLER = "".join(f"def unrelated_{i}(x):\n    return x + {i}\n\n\n" for i in range(200))
MODULE = (
    '"""A parser."""\n\nimport re\n\n\n' + FILLER
    + "class Parser:\n"
    "    def __init__(self, text):\n"
    "        self.tokens = re.findall(r'\\S+', text)\n\n"
    "    def parse(self):\n"
    "        return self._sum()\n\n"
    "    def _sum(self):\n"
    "        if self.tokens:\n"  # the bug: should loop
    "            return int(self.tokens[0])\n"
    "        return 0\n\n\n"
    + FILLER.replace("unrelated_", "other_")
    + "def evaluate(text):\n    return Parser(text).parse()\n"
)


def lines_of(text: str, needle: str) -> int:
    return text.split("\n").index(needle) + 1


def test_python_excerpt_follows_calls_from_the_named_function_to_the_bug():
    cut = excerpt.excerpt("calc.py", MODULE, set(), {"evaluate"}, cap=800)
    shown = {n for start, end in cut.lines for n in range(start, end + 1)}
    for needle in ("def evaluate(text):", "    def _sum(self):", "    def __init__(self, text):",
                   "class Parser:", "import re"):
        assert lines_of(MODULE, needle) in shown, needle
    assert lines_of(MODULE, "def unrelated_5(x):") not in shown
    rows = cut.render(MODULE)
    assert sum(len(line) + 1 for n, line in rows if n is not None) <= 800
    assert any(n is None and line.startswith("⋮ lines ") for n, line in rows)
    assert rows[-1][0] == lines_of(MODULE, "    return Parser(text).parse()")  # no marker past the end


def test_traceback_lines_seed_the_excerpt_and_numbers_stay_true(tmp_path):
    bug = lines_of(MODULE, "            return int(self.tokens[0])")
    cut = excerpt.excerpt("calc.py", MODULE, {bug}, set(), cap=400)
    rows = cut.render(MODULE)
    assert (bug, "            return int(self.tokens[0])") in rows
    content = "\n".join(line for _, line in rows) + "\n"
    numbered = render_file("calc.py", content, numbered=True, line_numbers=tuple(n for n, _ in rows))
    assert f"{bug} |             return int(self.tokens[0])" in numbered
    assert "\n      ⋮ lines 6-805 not shown" in numbered  # a marker has no number of its own


def test_text_excerpt_windows_around_mentions():
    text = "".join(f"row {i}\n" for i in range(500)) + "the needle here\n" + "tail\n" * 100
    cut = excerpt.excerpt("notes.txt", text, set(), {"needle"}, cap=2000)
    rows = cut.render(text)
    assert (501, "the needle here") in rows and (1, "row 0") not in rows
    assert excerpt.excerpt("notes.txt", text, set(), {"absent"}, cap=2000) is None


def test_gather_shows_the_reached_code_of_a_long_module_and_follows_imports(tmp_path):
    files = {
        "pkg/__init__.py": "",
        "pkg/calc.py": "from .digits import to_int\n\n" + MODULE.replace("int(self.tokens[0])",
                                                                          "to_int(self.tokens[0])"),
        "pkg/digits.py": "def to_int(s):\n    return int(s)\n",
        "tests/test_calc.py": "from pkg.calc import evaluate\n\n\ndef test_sum():\n"
                              "    assert evaluate('1 2') == 3\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    ws = Workspace(tmp_path)
    out = ("    def test_sum():\n>       assert evaluate('1 2') == 3\nE       assert 1 == 3\n\n"
           "tests/test_calc.py:5: AssertionError\nFAILED tests/test_calc.py::test_sum - assert 1 == 3\n")
    shown = context.gather(ws, "sums are wrong", out, max_file_chars=1500)
    assert [f.path for f in shown] == ["pkg/calc.py", "pkg/digits.py", "tests/test_calc.py"]
    calc = shown[0]
    assert calc.truncated and calc.line_numbers is not None
    assert "    def _sum(self):" in calc.content and "def unrelated_3(x):" not in calc.content
    assert "parts the failing tests reach" in context.render(shown, numbered=False)


def refusal(preview, ws, allow_test_edits, seen_in_part=frozenset()):
    """(outcome, what the model is told) of the first preview check that refuses `preview`, else None."""
    old = {p: ws.read_text(p) if ws.exists(p) else None for p in preview.new_contents}
    draft = Draft("", None, None, preview=preview, old=old)
    ctx = Context(ws, "", "", AgentConfig(allow_test_edits=allow_test_edits), None, seen_in_part=seen_in_part)
    try:
        for check in edit_checks.CHECKS:
            check(draft, ctx)
    except ReplyRejected as refused:
        return refused.outcome, refused.message
    return None


def test_edits_that_drop_folded_lines_are_refused(tmp_path):
    ws = Workspace(tmp_path)
    (tmp_path / "calc.py").write_text(MODULE)
    marker = excerpt.fold_marker(1, 400)
    copied = write_file(ws, "calc.py", MODULE.replace(FILLER, marker + "\n", 1), dry_run=True)
    outcome, told = refusal(copied, ws, allow_test_edits=False)
    assert outcome == "partial file" and "not shown" in told
    head = MODULE.split("class Parser")[0][:200].rsplit("\n\n\n", 1)[0]  # whole functions: it parses
    shrunk = write_file(ws, "calc.py", head + "\n", dry_run=True)
    assert refusal(shrunk, ws, False, seen_in_part=frozenset({"calc.py"}))[0] == "partial file"
    assert refusal(shrunk, ws, False) is None  # seen in full: a rewrite may shorten it
    fixed = write_file(ws, "calc.py", MODULE.replace("if self.tokens:", "while self.tokens:"), dry_run=True)
    assert refusal(fixed, ws, False, seen_in_part=frozenset({"calc.py"})) is None
    assert (tmp_path / "calc.py").read_text() == MODULE  # nothing written


def test_a_package_init_that_only_reexports_is_not_context():
    assert not defines_code('"""pkg."""\nfrom .core import a, b\n\n__all__ = ["a", "b"]\n')
    assert defines_code("from .core import a\n\nDEFAULT = a()\n")


def test_names_used_on_lines_leave_out_type_hints_comments_and_strings():
    source = ("def convert(value: Text, ctx: Context | None = None) -> Result:\n"  # 1
              "    # Version is not read here\n"                                    # 2
              "    x: Cache = lookup(value, 'Registry')\n"                          # 3
              "    return Parser(ctx).parse(x)\n"                                   # 4
              "y = Outside()\n")                                                    # 5
    from deltaserve.harness.python_refs import names_used_on

    assert names_used_on(source, {1, 2, 3, 4}) == {"lookup", "value", "Parser", "ctx", "x"}
    assert names_used_on(source, {5}) == {"Outside"}
    assert names_used_on("def broken(:\n", {1}) is None


def test_a_leaf_line_shows_its_definition_without_following_its_calls():
    """Coverage's suspects (leaf lines) are shown after the seeds, and what they call is not pulled in:
    the failure may only show there."""
    sum_line = lines_of(MODULE, "            return int(self.tokens[0])")
    cut = excerpt.excerpt("calc.py", MODULE, set(), set(), cap=2000, leaf_lines=frozenset({sum_line}))
    shown = {n for start, end in cut.lines for n in range(start, end + 1)}
    assert lines_of(MODULE, "    def _sum(self):") in shown and lines_of(MODULE, "class Parser:") in shown
    assert lines_of(MODULE, "    def parse(self):") not in shown  # not a callee, not followed either
    # followed from a seed, a leaf's callees would come in: parse() calls _sum()
    parse_line = lines_of(MODULE, "        return self._sum()")
    seeded = excerpt.excerpt("calc.py", MODULE, {parse_line}, set(), cap=2000)
    assert lines_of(MODULE, "    def _sum(self):") in {n for s, e in seeded.lines for n in range(s, e + 1)}
    evaluated = excerpt.excerpt("calc.py", MODULE, set(), set(), cap=2000,
                                leaf_lines=frozenset({lines_of(MODULE, "    return Parser(text).parse()")}))
    shown = {n for start, end in evaluated.lines for n in range(start, end + 1)}
    assert lines_of(MODULE, "def evaluate(text):") in shown
    assert lines_of(MODULE, "    def parse(self):") not in shown
