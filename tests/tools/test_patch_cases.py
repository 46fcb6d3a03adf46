"""A table of realistic model-written diffs, each with the exact expected workspace afterwards.

Every case runs twice: dry_run (nothing on disk changes, new_contents is the expected text) and for real.
Failure cases hash every file before and after: a rejected diff changes nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from deltaserve.tools.patch import HUNK_STRATEGIES, PatchError, apply_patch

CALC = """import math


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def area(r):
    return math.pi * r * r
"""

CLASSY = """class Stack:
    def __init__(self):
        self.items = []

    def push(self, x):
        self.items.append(x)

    def pop(self):
        return self.items.pop()
"""

MAKEFILE = "all: build\n\nbuild:\n\tgcc -O2 -o app main.c\n\nclean:\n\trm -f app\n"

DUP = """def first():
    x = compute()
    return x


def second():
    x = compute()
    return x
"""


@dataclass
class Case:
    name: str
    files: dict
    diff: str
    expected: dict  # path -> exact text (str) / bytes / None (must not exist)
    strategies: list = field(default_factory=list)  # expected strategy per hunk, if checked


CASES = [
    Case("clean_git_diff", {"calc.py": CALC},
         "diff --git a/calc.py b/calc.py\nindex 83db48f..bf269f4 100644\n--- a/calc.py\n+++ b/calc.py\n"
         "@@ -8,5 +8,5 @@ def add(a, b):\n def sub(a, b):\n-    return a - b\n"
         "+    return a - b  # difference\n \n \n"
         " def area(r):\n",
         {"calc.py": CALC.replace("return a - b", "return a - b  # difference")}, ["exact"]),
    Case("wrong_line_numbers", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -40,3 +40,3 @@\n def area(r):\n-    return math.pi * r * r\n"
         "+    return math.pi * r ** 2\n",
         {"calc.py": CALC.replace("r * r", "r ** 2")}, ["exact"]),
    Case("at_at_without_numbers", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ @@\n def add(a, b):\n-    return a + b\n+    return sum((a, b))\n",
         {"calc.py": CALC.replace("return a + b", "return sum((a, b))")}, ["exact"]),
    Case("at_at_with_placeholder_between", {"calc.py": CALC},  # the `@@ ... @@` many models write
         "--- a/calc.py\n+++ b/calc.py\n@@ ... @@\n def add(a, b):\n-    return a + b\n+    return b + a\n",
         {"calc.py": CALC.replace("return a + b", "return b + a")}, ["exact"]),
    Case("at_at_header_text_with_a_lone_at", {"calc.py": CALC},  # a decorator or an email in the header
         "--- a/calc.py\n+++ b/calc.py\n@@ @cache def add @@\n def add(a, b):\n-    return a + b\n"
         "+    return b + a\n", {"calc.py": CALC.replace("return a + b", "return b + a")}, ["exact"]),
    Case("at_at_header_text_with_a_lone_at_and_no_close", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ add @ calc\n def add(a, b):\n-    return a + b\n"
         "+    return b + a\n", {"calc.py": CALC.replace("return a + b", "return b + a")}, ["exact"]),
    # hunks without line numbers whose text repeats: the diff's order places them (real commits, stripped
    # of their numbers, hit this in test files full of alike parametrize blocks)
    Case("ambiguous_hunk_placed_by_the_next_one", {"dup.py": DUP},
         "--- a/dup.py\n+++ b/dup.py\n@@ @@\n     x = compute()\n-    return x\n+    return x + 1\n"
         "@@ @@\n def second():\n     x = compute()\n",
         {"dup.py": DUP.replace("return x", "return x + 1", 1)}, ["exact", "exact"]),
    Case("ambiguous_hunk_placed_by_the_one_before", {"dup.py": DUP},
         "--- a/dup.py\n+++ b/dup.py\n@@ @@\n def second():\n+    \"\"\"Again.\"\"\"\n"
         "@@ @@\n     x = compute()\n-    return x\n+    return -x\n",
         {"dup.py": DUP.replace("def second():\n", "def second():\n    \"\"\"Again.\"\"\"\n")
                       .replace("    return x\n", "    return -x\n").replace("return -x", "return x", 1)},
         ["exact", "exact"]),
    Case("all_hunks_ambiguous_but_one_order_fits", {"dup.py": DUP},
         "--- a/dup.py\n+++ b/dup.py\n@@ @@\n     x = compute()\n-    return x\n+    return 1\n"
         "@@ @@\n     x = compute()\n-    return x\n+    return 2\n",
         {"dup.py": DUP.replace("return x", "return 1", 1).replace("return x", "return 2")},
         ["exact", "exact"]),
    Case("context_without_leading_space", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -4,2 +4,3 @@\ndef add(a, b):\n+    \"\"\"Add.\"\"\"\n"
         "     return a + b\n",
         {"calc.py": CALC.replace("def add(a, b):\n", "def add(a, b):\n    \"\"\"Add.\"\"\"\n")}, ["exact"]),
    Case("indented_context_lost_its_space", {"calc.py": CALC},
         # "    return a + b" written without the diff's context space: it parses as 3-space indentation.
         "--- a/calc.py\n+++ b/calc.py\n@@ -4,2 +4,3 @@\n def add(a, b):\n    return a + b\n+\n"
         "+ADDED = True\n",
         {"calc.py": CALC.replace("    return a + b\n", "    return a + b\n\nADDED = True\n")}, ["indent"]),
    Case("wrong_hunk_counts", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -8,7 +8,9 @@\n def sub(a, b):\n-    return a - b\n"
         "+    return a - b\n"
         "+\n+\n+def mul(a, b):\n+    return a * b\n",
         {"calc.py": CALC.replace("    return a - b\n", "    return a - b\n\n\ndef mul(a, b):\n"
                                                        "    return a * b\n")},
         ["exact"]),
    Case("fenced_with_prose", {"calc.py": CALC},
         "The bug is in `sub`. Here is the fix:\n\n```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -8,2 +8,2 @@\n"
         " def sub(a, b):\n-    return a - b\n+    return a - b - 0\n```\n\nThis keeps behaviour the same.\n",
         {"calc.py": CALC.replace("return a - b", "return a - b - 0")}, ["exact"]),
    Case("filename_line_before_fence_no_headers", {"pkg/calc.py": CALC},
         "pkg/calc.py\n```diff\n@@ -12,2 +12,2 @@\n def area(r):\n-    return math.pi * r * r\n"
         "+    return math.pi * r**2\n```\n",
         {"pkg/calc.py": CALC.replace("r * r", "r**2")}, ["exact"]),
    Case("bold_filename_before_fence", {"calc.py": CALC},
         "**calc.py**\n```diff\n@@ @@\n def sub(a, b):\n-    return a - b\n+    return -(b - a)\n```\n",
         {"calc.py": CALC.replace("return a - b", "return -(b - a)")}, ["exact"]),
    Case("git_line_without_headers", {"calc.py": CALC},
         "diff --git a/calc.py b/calc.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n"
         "+    return b + a\n",
         {"calc.py": CALC.replace("a + b", "b + a")}, ["exact"]),
    Case("crlf_file_lf_diff", {"win.txt": "alpha\r\nbeta\r\ngamma\r\n"},
         "--- a/win.txt\n+++ b/win.txt\n@@ -1,3 +1,4 @@\n alpha\n-beta\n+BETA\n+beta2\n gamma\n",
         {"win.txt": b"alpha\r\nBETA\r\nbeta2\r\ngamma\r\n"}, ["exact"]),
    Case("crlf_diff_lf_file", {"calc.py": CALC},
         "--- a/calc.py\r\n+++ b/calc.py\r\n@@ -4,2 +4,2 @@\r\n def add(a, b):\r\n-    return a + b\r\n"
         "+    return a + b + 0\r\n",
         {"calc.py": CALC.replace("a + b\n", "a + b + 0\n")}, ["exact"]),
    Case("no_final_newline_kept", {"end.py": "x = 1\ny = 2"},
         "--- a/end.py\n+++ b/end.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n",
         {"end.py": "x = 1\ny = 3"}, ["exact"]),
    Case("no_newline_marker_adds_newline", {"end.py": "x = 1\ny = 2"},
         "--- a/end.py\n+++ b/end.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n"
         "\\ No newline at end of file\n+y = 2\n",
         {"end.py": "x = 1\ny = 2\n"}, ["exact"]),
    Case("no_newline_marker_removes_newline", {"end.py": "x = 1\ny = 2\n"},
         "--- a/end.py\n+++ b/end.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 2\n"
         "\\ No newline at end of file\n",
         {"end.py": "x = 1\ny = 2"}, ["exact"]),
    Case("tabs_makefile", {"Makefile": MAKEFILE},
         "--- a/Makefile\n+++ b/Makefile\n@@ -3,2 +3,2 @@\n build:\n-\tgcc -O2 -o app main.c\n"
         "+\tgcc -O2 -Wall -o app main.c\n",
         {"Makefile": MAKEFILE.replace("-O2 -o", "-O2 -Wall -o")}, ["exact"]),
    Case("tabs_turned_to_spaces_by_model", {"Makefile": MAKEFILE},
         "--- a/Makefile\n+++ b/Makefile\n@@ -6,2 +6,2 @@\n clean:\n-    rm -f app\n+    rm -f app *.o\n",
         {"Makefile": MAKEFILE.replace("\trm -f app\n", "\trm -f app *.o\n")}, None),
    Case("whole_hunk_dedented", {"stack.py": CLASSY},
         "--- a/stack.py\n+++ b/stack.py\n@@ -8,2 +8,4 @@\n def pop(self):\n-    return self.items.pop()\n"
         "+    if not self.items:\n+        raise IndexError(\"empty\")\n+    return self.items.pop()\n",
         {"stack.py": CLASSY.replace("        return self.items.pop()\n",
                                     "        if not self.items:\n            raise IndexError(\"empty\")\n"
                                     "        return self.items.pop()\n")}, ["indent"]),
    Case("indented_hunk_removing_a_blank_line", {"stack.py": CLASSY},
         # Every line 4 spaces too deep; the only removed line is blank, so the shift comes from context.
         "--- a/stack.py\n+++ b/stack.py\n@@ -3,3 +3,3 @@\n             self.items = []\n-\n+        # push\n"
         "         def push(self, x):\n",
         {"stack.py": CLASSY.replace("self.items = []\n\n", "self.items = []\n    # push\n")}, ["indent"]),
    Case("context_missing_a_blank_line", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -4,6 +4,6 @@\n def add(a, b):\n     return a + b\n \n"
         " def sub(a, b):\n"
         "-    return a - b\n+    return a - (b)\n",
         {"calc.py": CALC.replace("a - b", "a - (b)")}, ["blank-lines"]),
    Case("context_with_an_extra_blank_line", {"stack.py": CLASSY},
         "--- a/stack.py\n+++ b/stack.py\n@@ -5,4 +5,6 @@\n     def push(self, x):\n"
         "         self.items.append(x)\n \n \n"
         "+    def peek(self):\n+        return self.items[-1]\n+\n     def pop(self):\n",
         {"stack.py": CLASSY.replace("    def pop", "    def peek(self):\n        return self.items[-1]\n\n"
                                                    "    def pop")},
         ["blank-lines"]),
    Case("trailing_whitespace_in_file", {"t.py": "def f():   \n    return 1  \n"},
         "--- a/t.py\n+++ b/t.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n",
         {"t.py": "def f():   \n    return 2\n"}, ["rstrip"]),
    Case("fuzzy_typo_in_context", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -8,5 +8,5 @@\n def sub(a, b):\n-    return a - b\n"
         "+    return a - b + 0\n \n \n"
         " def aera(r):\n",
         {"calc.py": CALC.replace("return a - b", "return a - b + 0")}, ["fuzzy"]),
    Case("multi_hunk", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,2 @@\n import math\n+import sys\n@@ -8,2 +9,2 @@\n"
         " def sub(a, b):\n-    return a - b\n+    return a - b  # checked\n",
         {"calc.py": CALC.replace("import math\n", "import math\nimport sys\n")
                         .replace("a - b", "a - b  # checked")},
         ["exact", "exact"]),
    Case("hunks_out_of_order", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -12,2 +12,2 @@\n def area(r):\n-    return math.pi * r * r\n"
         "+    return math.pi * r * r  # m^2\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n"
         "+    return a + b  # sum\n",
         {"calc.py": CALC.replace("r * r", "r * r  # m^2").replace("a + b\n", "a + b  # sum\n")},
         ["exact", "exact"]),
    Case("multi_file", {"calc.py": CALC, "stack.py": CLASSY},
         "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-import math\n+import math  # used by area\n"
         "--- a/stack.py\n+++ b/stack.py\n@@ -2,2 +2,2 @@\n     def __init__(self):\n"
         "-        self.items = []\n"
         "+        self.items: list = []\n",
         {"calc.py": CALC.replace("import math", "import math  # used by area"),
          "stack.py": CLASSY.replace("self.items = []", "self.items: list = []")}, ["exact", "exact"]),
    Case("new_file", {"calc.py": CALC},
         "--- /dev/null\n+++ b/tests/test_calc.py\n@@ -0,0 +1,5 @@\n+from calc import add\n+\n+\n"
         "+def test_add():\n+    assert add(1, 2) == 3\n",
         {"calc.py": CALC, "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n"
                                                 "    assert add(1, 2) == 3\n"},
         ["create"]),
    Case("new_file_git_style", {},
         "diff --git a/pkg/__init__.py b/pkg/__init__.py\nnew file mode 100644\nindex 0000000..e69de29\n"
         "--- /dev/null\n+++ b/pkg/__init__.py\n@@ -0,0 +1 @@\n+VERSION = \"1.0\"\n",
         {"pkg/__init__.py": "VERSION = \"1.0\"\n"}, ["create"]),
    Case("deleted_file", {"calc.py": CALC, "old.py": "print('old')\n"},
         "diff --git a/old.py b/old.py\ndeleted file mode 100644\nindex 1111111..0000000\n--- a/old.py\n"
         "+++ /dev/null\n@@ -1 +0,0 @@\n-print('old')\n",
         {"calc.py": CALC, "old.py": None}, ["delete"]),
    Case("rename_with_edit", {"utils.py": "def helper():\n    return 1\n"},
         "diff --git a/utils.py b/helpers.py\nsimilarity index 80%\nrename from utils.py\n"
         "rename to helpers.py\n"
         "--- a/utils.py\n+++ b/helpers.py\n@@ -1,2 +1,2 @@\n def helper():\n-    return 1\n+    return 2\n",
         {"utils.py": None, "helpers.py": "def helper():\n    return 2\n"}, ["exact"]),
    Case("pure_rename", {"a.txt": "same\n"},
         "diff --git a/a.txt b/docs/a.txt\nsimilarity index 100%\nrename from a.txt\nrename to docs/a.txt\n",
         {"a.txt": None, "docs/a.txt": "same\n"}, []),
    Case("ambiguous_resolved_by_line_number", {"dup.py": DUP},
         "--- a/dup.py\n+++ b/dup.py\n@@ -7,2 +7,2 @@\n     x = compute()\n-    return x\n"
         "+    return x + 1\n",
         {"dup.py": DUP[: DUP.rindex("return x")] + "return x + 1\n"}, ["exact"]),
    Case("headers_without_ab_prefixes", {"src/app.py": "DEBUG = True\n"},
         "--- src/app.py\n+++ src/app.py\n@@ -1 +1 @@\n-DEBUG = True\n+DEBUG = False\n",
         {"src/app.py": "DEBUG = False\n"}, ["exact"]),
    Case("diff_u_timestamps", {"calc.py": CALC},
         "--- calc.py\t2024-01-01 10:00:00.000000000 +0000\n"
         "+++ calc.py\t2024-01-02 10:00:00.000000000 +0000\n"
         "@@ -1,3 +1,3 @@\n-import math\n+import math as m\n \n \n",
         {"calc.py": CALC.replace("import math\n", "import math as m\n")}, ["exact"]),
    Case("same_file_in_two_sections", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n"
         "+    return a + b  # 1\n"
         "--- a/calc.py\n+++ b/calc.py\n@@ -8,2 +8,2 @@\n def sub(a, b):\n-    return a - b\n"
         "+    return a - b  # 2\n",
         {"calc.py": CALC.replace("a + b\n", "a + b  # 1\n").replace("a - b\n", "a - b  # 2\n")},
         ["exact", "exact"]),
    Case("append_at_end", {"calc.py": CALC},
         "--- a/calc.py\n+++ b/calc.py\n@@ -12,2 +12,6 @@\n def area(r):\n     return math.pi * r * r\n+\n+\n"
         "+def circumference(r):\n+    return 2 * math.pi * r\n",
         {"calc.py": CALC + "\n\ndef circumference(r):\n    return 2 * math.pi * r\n"}, ["exact"]),
    Case("prose_between_sections_bare_headers", {"calc.py": CALC},
         "--- /dev/null\n+++ b/NOTES.md\n@@ @@\n+# Notes\n+- fixed sub\n\nNow the code:\n--- a/calc.py\n"
         "+++ b/calc.py\n"
         "@@ @@\n def sub(a, b):\n-    return a - b\n+    return a - b  # ok\n\nThat's all.\n",
         {"NOTES.md": "# Notes\n- fixed sub\n", "calc.py": CALC.replace("a - b\n", "a - b  # ok\n")},
         ["create", "exact"]),
    Case("insert_by_line_number_only", {"list.txt": "a\nb\nc\n"},
         "--- a/list.txt\n+++ b/list.txt\n@@ -2,0 +3 @@\n+b2\n",
         {"list.txt": "a\nb\nb2\nc\n"}, ["line-number"]),
    Case("bom_and_latin1_kept", {"bom.txt": b"\xef\xbb\xbfhello\nworld\n", "l1.txt": b"caf\xe9\nbar\n"},
         "--- a/bom.txt\n+++ b/bom.txt\n@@ -2 +2 @@\n-world\n+there\n--- a/l1.txt\n+++ b/l1.txt\n"
         "@@ -1,2 +1,2 @@\n"
         " caf\u00e9\n-bar\n+baz\n",
         {"bom.txt": b"\xef\xbb\xbfhello\nthere\n", "l1.txt": b"caf\xe9\nbaz\n"}, ["exact", "exact"]),
    Case("index_line_names_the_file", {"calc.py": CALC},
         "Index: calc.py\n===================================================================\n"
         "@@ -4,2 +4,2 @@\n"
         " def add(a, b):\n-    return a + b\n+    return int(a) + int(b)\n",
         {"calc.py": CALC.replace("return a + b", "return int(a) + int(b)")}, ["exact"]),
]


def _read(root, path):
    p = root / path
    return p.read_bytes() if p.exists() else None


def _expect_bytes(v):
    return v if isinstance(v, bytes) or v is None else v.encode("utf-8")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(workspace, snapshot, case):
    ws = workspace(case.files)
    before = snapshot(ws.root)
    dry = apply_patch(ws, case.diff, dry_run=True)
    assert snapshot(ws.root) == before, "dry_run must not touch disk"
    result = apply_patch(ws, case.diff)
    for path, want in case.expected.items():
        assert _read(ws.root, path) == _expect_bytes(want), path
        if path in dry.files_changed:
            got = dry.new_contents[path]
            assert (got.encode("latin-1" if path == "l1.txt" else "utf-8") if got is not None else None) == (
                _expect_bytes(want).removeprefix(b"\xef\xbb\xbf") if want is not None else None)
    assert dry.files_changed == result.files_changed
    assert {h.strategy for h in result.hunks} <= set(HUNK_STRATEGIES)
    if case.strategies is not None:
        assert [h.strategy for h in result.hunks] == case.strategies
    # Nothing else appeared (no temp files left behind).
    names = {os.path.relpath(os.path.join(d, f), ws.root) for d, _, fs in os.walk(ws.root) for f in fs}
    expected = {**case.files, **case.expected}
    assert names == {p for p, v in expected.items() if case.expected.get(p, v) is not None}


def test_mode_kept(workspace):
    ws = workspace({"run.sh": "#!/bin/sh\necho hi\n"})
    os.chmod(ws.root / "run.sh", 0o755)
    apply_patch(ws, "--- a/run.sh\n+++ b/run.sh\n@@ -2 +2 @@\n-echo hi\n+echo bye\n")
    assert (ws.root / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (ws.root / "run.sh").read_text() == "#!/bin/sh\necho bye\n"


def test_mixed_line_endings_untouched_lines_keep_theirs(workspace):
    ws = workspace({"mix.txt": b"a\r\nb\nc\r\nd\r\n"})
    apply_patch(ws, "--- a/mix.txt\n+++ b/mix.txt\n@@ -2,2 +2,2 @@\n b\n-c\n+C\n")
    assert (ws.root / "mix.txt").read_bytes() == b"a\r\nb\nC\r\nd\r\n"


def test_a_file_created_by_a_diff_keeps_the_crlf_its_added_lines_have(workspace):
    """git's diff of a new CRLF file (a .bat) beside LF files: the CRs are the file's (a replayed tomlkit
    commit created docs/make.bat with LF); a reply in CRLF throughout still writes LF."""
    ws = workspace({"calc.py": CALC})
    diff = ("--- /dev/null\n+++ b/make.bat\n@@ -0,0 +1,2 @@\n+@ECHO OFF\r\n+pushd %~dp0\r\n"
            "--- a/calc.py\n+++ b/calc.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n"
            "+    return b + a\n")
    apply_patch(ws, diff)
    assert (ws.root / "make.bat").read_bytes() == b"@ECHO OFF\r\npushd %~dp0\r\n"
    assert (ws.root / "calc.py").read_text() == CALC.replace("a + b", "b + a")
    apply_patch(ws, "--- /dev/null\r\n+++ b/new.txt\r\n@@ -0,0 +1,2 @@\r\n+one\r\n+two\r\n")
    assert (ws.root / "new.txt").read_bytes() == b"one\ntwo\n"
    apply_patch(ws, "--- /dev/null\r\n+++ b/more.txt\r\n@@ @@\n+one\r\n")  # one header lost its CR
    assert (ws.root / "more.txt").read_bytes() == b"one\n"


@dataclass
class Bad:
    name: str
    files: dict
    diff: str
    must_say: list  # substrings the model-facing message must contain


BAD = [
    Bad("context_not_found", {"calc.py": CALC},
        "--- a/calc.py\n+++ b/calc.py\n@@ -8,2 +8,2 @@\n def subtract(x, y):\n-    return x - y\n"
        "+    return y - x\n",
        ["Hunk 1 of 1 for calc.py", "not found", "Closest lines in calc.py", "8 | def sub(a, b):",
         "No files were changed"]),
    Bad("ambiguous_without_line_numbers", {"dup.py": DUP},
        "--- a/dup.py\n+++ b/dup.py\n@@ @@\n     x = compute()\n-    return x\n+    return x + 1\n",
        ["match 2 places", "lines 2, 7", "context"]),
    Bad("ambiguous_last_hunk_after_its_neighbour", {"dup.py": "def a():\n    pass\n" + DUP},
        "--- a/dup.py\n+++ b/dup.py\n@@ @@\n def a():\n-    pass\n+    return 0\n"
        "@@ @@\n     x = compute()\n-    return x\n+    return x + 1\n",
        ["Hunk 2 of 2", "match 2 places"]),
    Bad("ambiguous_hunk_among_hunks_out_of_order", {"dup.py": DUP},
        # the placed hunk comes first in the file but last in the diff: no order to trust
        "--- a/dup.py\n+++ b/dup.py\n@@ @@\n     x = compute()\n-    return x\n+    return x + 1\n"
        "@@ @@\n-def first():\n+def first_one():\n",
        ["Hunk 1 of 2", "match 2 places"]),
    Bad("second_file_fails_first_untouched", {"calc.py": CALC, "stack.py": CLASSY},
        "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-import math\n+import cmath\n"
        "--- a/stack.py\n+++ b/stack.py\n@@ -1,2 +1,2 @@\n class Queue:\n-    pass\n+    items = []\n",
        ["stack.py", "not found", "Closest lines in stack.py"]),
    Bad("missing_file", {"pkg/calc.py": CALC},
        "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-import math\n+import cmath\n",
        ["calc.py does not exist", "Did you mean: pkg/calc.py"]),
    Bad("new_file_already_exists", {"calc.py": CALC},
        "--- /dev/null\n+++ b/calc.py\n@@ -0,0 +1 @@\n+print('hi')\n",
        ["calc.py already exists"]),
    Bad("path_escape_in_header", {"calc.py": CALC},
        "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-root\n+evil\n",
        ["'..'"]),
    Bad("git_dir_in_header", {"calc.py": CALC, ".git/config": "[core]\n"},
        "--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-[core]\n+[evil]\n",
        [".git"]),
    Bad("absolute_path", {"calc.py": CALC},
        "--- /etc/hosts\n+++ /etc/hosts\n@@ -1 +1 @@\n-x\n+y\n",
        ["absolute"]),
    Bad("not_a_diff", {"calc.py": CALC},
        "I think the bug is in sub(); it should return b - a.",
        ["no diff found"]),
    Bad("hunk_without_file_name", {"calc.py": CALC},
        "@@ -1 +1 @@\n-import math\n+import cmath\n",
        ["before any file name"]),
    Bad("overlapping_hunks", {"calc.py": CALC},
        "--- a/calc.py\n+++ b/calc.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n+    return 1\n"
        "@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a + b\n+    return 2\n",
        ["Hunk 2 of 2", "not found"]),
    Bad("rename_onto_existing", {"a.py": "A = 1\n", "b.py": "B = 1\n"},
        "diff --git a/a.py b/b.py\nrename from a.py\nrename to b.py\n--- a/a.py\n+++ b/b.py\n@@ -1 +1 @@\n"
        "-A = 1\n+A = 2\n",
        ["b.py already exists"]),
    Bad("binary_target", {"img.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00"},
        "--- a/img.png\n+++ b/img.png\n@@ -1 +1 @@\n-x\n+y\n",
        ["binary"]),
    Bad("fuzzy_but_ambiguous",
        {"dup.py": DUP.replace("def first", "def step_a").replace("def second", "def step_b")},
        "--- a/dup.py\n+++ b/dup.py\n@@ @@\n def step_c():\n     x = compute()\n-    return x\n"
        "+    return 0\n",
        ["approximate matches are ambiguous", "lines 1, 6"]),
    Bad("fuzzy_removed_line_names_another_function",  # seen from a 1.5B model: a misremembered def line
        {"p.py": "class P:\n    def parse(self) -> Node:\n        node = self._expr()\n"
                 "        if self.kind != 'end':\n            raise self._error('unexpected end')\n"
                 "        return node\n"},
        "--- a/p.py\n+++ b/p.py\n@@ @@\n-    def _expr(self) -> Node:\n         node = self._expr()\n"
        "         if self.kind != 'end':\n             raise self._error('unexpected end')\n"
        "-        return node\n",
        ["not found"]),
    Bad("removed_line_not_in_file", {"calc.py": CALC},
        "--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,3 @@\n def add(a, b):\n-    return a * b * c * d\n"
        "+    return 0\n \n",
        ["not found", "4 | def add(a, b):"]),
    Bad("binary_patch", {"logo.png": b"\x89PNG\r\n\x1a\n\x00"},
        "diff --git a/logo.png b/logo.png\nindex 1234567..89abcde 100644\n"
        "Binary files a/logo.png and b/logo.png differ\n",
        ["logo.png: binary patches are not supported"]),
    Bad("blank_only_context_far_from_its_line", {"b.txt": "a\n\n\nb\nc\nd\n"},
        "--- a/b.txt\n+++ b/b.txt\n@@ -5,1 +5,2 @@\n \n+new\n",
        ["all blank", "only its @@ line number"]),
    Bad("added_lines_indent_unknowable", {"m.py": "class A:\n    def f(self):\n        pass\n"},
        # Context 3 spaces shallower than the file and nothing removed: a 4-space shift plus a lost diff
        # prefix, or a 3-space codebase? The added line's indentation would be a guess.
        "--- a/m.py\n+++ b/m.py\n@@ -2,2 +2,3 @@\n  def f(self):\n      pass\n+    return 1\n",
        ["not found"]),
    Bad("symlink_escape", {"calc.py": CALC},
        "--- a/link/passwd\n+++ b/link/passwd\n@@ -1 +1 @@\n-root\n+evil\n",
        ["outside the workspace"]),
]


@pytest.mark.parametrize("bad", BAD, ids=[b.name for b in BAD])
def test_bad_diff_changes_nothing(workspace, snapshot, bad):
    ws = workspace(bad.files)
    if bad.name == "symlink_escape":
        os.symlink("/etc", ws.root / "link")
    before = snapshot(ws.root)
    for dry_run in (True, False):
        with pytest.raises(PatchError) as exc:
            apply_patch(ws, bad.diff, dry_run=dry_run)
        for s in bad.must_say:
            assert s in exc.value.message, (s, exc.value.message)
        assert snapshot(ws.root) == before


def test_failed_write_rolls_back(workspace, snapshot, monkeypatch):
    """If the second file's write fails, the first is restored: all or nothing even at commit time."""
    import deltaserve.tools.patch as patch_mod

    ws = workspace({"a.py": "A = 1\n", "b.py": "B = 1\n"})
    before = snapshot(ws.root)
    real_write = patch_mod.atomic_write
    calls = []

    def flaky(path, data, mode):
        calls.append(path.name)
        if path.name == "b.py" and len(calls) == 2:
            raise OSError("disk full")
        real_write(path, data, mode)

    monkeypatch.setattr(patch_mod, "atomic_write", flaky)
    with pytest.raises(PatchError, match="disk full"):
        apply_patch(ws, "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-A = 1\n+A = 2\n--- a/b.py\n+++ b/b.py\n"
                        "@@ -1 +1 @@\n"
                        "-B = 1\n+B = 2\n")
    assert snapshot(ws.root) == before


def test_unencodable_edit_refused_even_in_dry_run(workspace, snapshot):
    ws = workspace({"l1.txt": b"caf\xe9\n"})  # latin-1 file: cannot store a CJK character
    before = snapshot(ws.root)
    diff = "--- a/l1.txt\n+++ b/l1.txt\n@@ -1 +1 @@\n-caf\u00e9\n+caf\u00e9 \u4e2d\n"
    for dry_run in (True, False):
        with pytest.raises(PatchError, match="cannot store"):
            apply_patch(ws, diff, dry_run=dry_run)
    assert snapshot(ws.root) == before


def test_unreadable_file_is_a_patch_error(workspace, snapshot, monkeypatch):
    ws = workspace({"secret.py": "x = 1\n"})
    os.chmod(ws.root / "secret.py", 0)
    if os.geteuid() == 0:  # root reads everything: make the read fail the way it does for anyone else
        real_read = Path.read_bytes

        def refuse(path):
            if path.name == "secret.py":
                raise PermissionError(13, "Permission denied", str(path))
            return real_read(path)

        monkeypatch.setattr(Path, "read_bytes", refuse)
    before = snapshot(ws.root)
    with pytest.raises(PatchError, match="Permission denied") as exc:
        apply_patch(ws, "--- a/secret.py\n+++ b/secret.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
    assert "secret.py" in exc.value.message and "No files were changed" in exc.value.message
    assert snapshot(ws.root) == before


def test_parent_path_is_a_file(workspace, snapshot):
    ws = workspace({"calc.py": CALC})
    before = snapshot(ws.root)
    with pytest.raises(PatchError):
        apply_patch(ws, "--- /dev/null\n+++ b/calc.py/inner.py\n@@ -0,0 +1 @@\n+x = 1\n")
    assert snapshot(ws.root) == before


@pytest.mark.parametrize("hunks", ["", "@@ -0,0 +1 @@\n+x\n"])
def test_a_section_naming_no_file_is_refused(workspace, snapshot, hunks):
    """`--- /dev/null` and `+++ /dev/null` (found by hypothesis's hostile diffs): a clear error, no crash."""
    ws = workspace({"a.py": "A = 1\n"})
    before = snapshot(ws.root)
    with pytest.raises(PatchError, match="names no file"):
        apply_patch(ws, f"--- /dev/null\n+++ /dev/null\n{hunks}")
    assert snapshot(ws.root) == before


def test_result_says_where_each_hunk_matched(workspace):
    """Hunks are placed by content: the result reports the real start line, not the diff's wrong numbers."""
    ws = workspace({"calc.py": CALC})
    result = apply_patch(ws, "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def sub(a, b):\n"
                             "-    return a - b\n"
                             "+    return b - a\n@@ -40 +40 @@\n def area(r):\n-    return math.pi * r * r\n"
                             "+    return math.pi * r ** 2\n")
    assert [(h.file, h.index, h.start_line) for h in result.hunks] == [("calc.py", 0, 8), ("calc.py", 1, 12)]
    assert (ws.root / "calc.py").read_text().splitlines()[8:13] == [
        "    return b - a", "", "", "def area(r):", "    return math.pi * r ** 2"]


@pytest.mark.parametrize("name", ["Makefile", "Dockerfile", "LICENSE"])
def test_a_file_without_extension_named_alone_before_its_edit(workspace, name):
    """A bare word is prose, except the names files go by without a dot (replaying this project's own
    commits: a Makefile block was read as the previous file's)."""
    ws = workspace({name: "all: build\n", "calc.py": CALC})
    apply_patch(ws, f"{name}\n```diff\n@@ @@\n-all: build\n+all: build test\n```\n")
    assert (ws.root / name).read_text() == "all: build test\n"
