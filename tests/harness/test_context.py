"""Which files the model sees first, and the size caps."""

from deltaserve.harness import context
from deltaserve.tools.workspace import Workspace

TRACEBACK = """Traceback (most recent call last):
  File "{root}/tests/test_parse.py", line 9, in test_parse
    parse_line("x")
  File "{root}/pkg/parser.py", line 3, in parse_line
    return helper(s)
  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads
tests/test_parse.py:9: in test_parse
pkg/util.py:2: TypeError
FAILED tests/test_parse.py::test_parse - TypeError
"""


def make(tmp_path, files):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return Workspace(tmp_path)


def test_traceback_paths_inside_the_workspace_in_order(tmp_path):
    ws = make(tmp_path, {"tests/test_parse.py": "", "pkg/parser.py": "", "pkg/util.py": ""})
    found = context.paths_in_traceback(ws, TRACEBACK.format(root=ws.root))
    assert found == ["tests/test_parse.py", "pkg/parser.py", "pkg/util.py"]  # stdlib frame left out


def test_stack_traces_of_other_languages_name_their_files_and_lines(tmp_path):
    ws = make(tmp_path, {"src/calc.js": "", "test/calc.test.js": "", "src/lib.rs": ""})
    trace = (f"    at add ({ws.root}/src/calc.js:3:10)\n    at Object.<anonymous> (test/calc.test.js:5:12)\n"
             "    at node:internal/main:3:7\nthread 'tests::adds' panicked at src/lib.rs:7:17:\n")
    assert context.paths_in_traceback(ws, trace) == ["src/calc.js", "test/calc.test.js", "src/lib.rs"]
    assert context.lines_in_traceback(ws, trace) == {"src/calc.js": {3}, "test/calc.test.js": {5},
                                                     "src/lib.rs": {7}}


def test_definitions_in_other_languages_and_javascript_imports(tmp_path):
    ws = make(tmp_path, {
        "src/calc.js": "exports.add = (a, b) => a - b;\n", "src/util/index.ts": "export const clamp = 1;\n",
        "src/lib.rs": "pub(crate) fn parse_line(s: &str) {}\n",
        "calc.go": "func (c *Calc) Mul(a int) int {\n",
        "pkg/mod.py": "async def fetch(url):\n    pass\n", "README.md": "Call add(1, 2) to add.\n",
        "test/calc.test.js": "const {add} = require('../src/calc');\nimport {clamp} from '../src/util';\n"})
    assert context.definition_files(ws, ["add", "clamp", "parse_line", "Mul", "fetch"]) == [
        "src/calc.js", "src/util/index.ts", "src/lib.rs", "calc.go", "pkg/mod.py"]
    test_js = (tmp_path / "test/calc.test.js").read_text()
    assert context.relative_imports(ws, "test/calc.test.js", test_js) == ["src/calc.js", "src/util/index.ts"]


def test_task_paths_and_symbols(tmp_path):
    ws = make(tmp_path, {"pkg/config.py": "", "README.md": ""})
    task = "load_config in pkg/config.py ignores `Defaults.merge`; see README.md (e.g. the example)."
    assert context.paths_in_task(ws, task) == ["pkg/config.py", "README.md"]
    found = context.symbols(task, "E  +  where 3 = count_words('a b')")
    assert found == ["count_words", "load_config", "merge"]


def test_gather_orders_traceback_task_then_definitions_code_before_tests_with_caps(tmp_path):
    ws = make(tmp_path, {
        "tests/test_parse.py": "from pkg.parser import parse_line\n",
        "pkg/parser.py": "from pkg.util import helper\n\ndef parse_line(s):\n    return helper(s)\n",
        "pkg/util.py": "def helper(s):\n    return int(s)\n",
        "pkg/big.py": "".join(f"line_{i} = {i}\n" for i in range(2000)),
        "pkg/other.py": "class Tokenizer:\n    pass\n",
    })
    out = "tests/test_parse.py:1: in <module>\npkg/parser.py:4: in parse_line\n"
    files = context.gather(ws, "Tokenizer breaks; also see pkg/big.py", out, max_file_chars=300)
    # pkg/util.py: imported by pkg/parser.py
    assert [f.path for f in files] == ["pkg/parser.py", "pkg/big.py", "pkg/other.py", "pkg/util.py",
                                       "tests/test_parse.py"]
    big = files[1]
    assert big.truncated and len(big.content) <= 300 and big.content.endswith("\n")  # cut at a line end
    assert "VIEW it with a line range" in context.render(files, numbered=True)
    capped = context.gather(ws, "Tokenizer breaks; also see pkg/big.py", out, max_files=2)
    assert [f.path for f in capped] == ["pkg/parser.py", "tests/test_parse.py"]  # a place kept for the tests
    total = context.gather(ws, "see pkg/big.py", "", max_total_chars=500)
    assert sum(len(f.content) for f in total) <= 500


def test_render_without_files_says_how_to_look():
    assert "VIEW or GREP" in context.render([], numbered=False)


def test_a_name_defined_in_many_files_points_only_where_other_names_are_defined(tmp_path):
    models = {f"pkg/model_{i}.py": "class Model:\n    def generate(self):\n        pass\n" for i in range(5)}
    ws = make(tmp_path, {
        **models,
        "pkg/model_2.py": "class Model:\n    def generate(self):\n        return sample(self)\n",
        "pkg/sampling.py": "def sample(model):\n    pass\n\n\nclass Sampler:\n    pass\n",
        "pkg/mixin.py": "class Mixin:\n    async def generate(self):\n        return Sampler()\n\n"
                        "def sample_all():\n    pass\n",
    })
    # `generate` is defined in 6 files: only the one that also defines another name is kept
    found = context.definition_files(ws, ["generate", "sample", "Sampler", "sample_all"])
    assert found == ["pkg/mixin.py", "pkg/sampling.py"]
    # defined in few enough files, every definition counts, name by name (async def, methods, classes)
    assert context.definition_files(ws, ["Sampler", "Mixin"]) == ["pkg/sampling.py", "pkg/mixin.py"]
    assert context.definition_files(ws, ["sampl"]) == []  # whole names only


def test_an_excerpt_brings_only_the_modules_its_shown_code_uses(tmp_path):
    filler = "".join(f"\n\ndef unrelated_{i}(x):\n    return Version(x)\n" for i in range(80))
    ws = make(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/utils.py": "from pkg.version import Version\nfrom pkg.names import lower\n"
                        f"# Version 2.0 licence\n{filler}\n\ndef canonical(name):\n"
                        "    return lower(name).replace('_', '-')\n",
        "pkg/version.py": "class Version:\n    pass\n",
        "pkg/names.py": "def lower(s):\n    return s.lower()\n",
        "tests/test_names.py": "from pkg.utils import canonical\n\n\ndef test_dots():\n"
                               "    assert canonical('a.b') == 'a-b'\n",
    })
    out = "tests/test_names.py:5: in test_dots\nFAILED tests/test_names.py::test_dots - AssertionError\n"
    files = context.gather(ws, "canonical() keeps dots", out, max_file_chars=1500)
    assert files[0].path == "pkg/utils.py" and files[0].line_numbers is not None  # an excerpt
    # lower() is called by the code shown; Version only by code folded away (and in a comment)
    assert [f.path for f in files] == ["pkg/utils.py", "pkg/names.py", "tests/test_names.py"]
    whole = context.gather(ws, "canonical() keeps dots", out)  # the file shown whole: all it imports
    assert [f.path for f in whole] == ["pkg/utils.py", "pkg/version.py", "pkg/names.py",
                                       "tests/test_names.py"]
