"""The symbol edit format's constraint (engine/constraints/symbol_grammar.py, a Lark grammar llguidance runs):
whatever a model's weights prefer, its reply is blocks naming the Python files in play, each a ```python
fence of definitions; a reply it ends is read by the symbol format's own parser as edits of those files."""

from __future__ import annotations

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltaserve.engine import SamplingParams
from deltaserve.engine.constraints import GrammarSpec
from deltaserve.engine.constraints.symbol_grammar import DEFINITIONS, MAX_BLOCKS
from deltaserve.harness.formats.symbol import SymbolEdit, SymbolFormat

FILES = ["calc.py", "pkg/util.py", "README.md"]  # the Markdown file cannot be named in a symbol reply


def _reply_pattern(paths: list[str]) -> regex.Pattern:
    names = "|".join(map(regex.escape, paths))
    block = rf"({names})\n```python\n{DEFINITIONS}```"
    return regex.compile(rf"{block}(\n\n?{block}){{0,{MAX_BLOCKS - 1}}}\n?")


@pytest.fixture(scope="module")
def eng(drafting_engine):
    return drafting_engine


@given(seed=st.integers(0, 2**31), temperature=st.sampled_from([0.0, 1.0, 1.6]))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_reply_is_a_start_of_definitions_of_the_python_files(eng, seed, temperature):
    out = eng.generate("Fix the bug.", SamplingParams(max_tokens=96, temperature=temperature, seed=seed,
                                                      grammar=GrammarSpec.symbol(FILES)))[0]
    assert out.error is None and out.finish_reason in ("stop", "length")
    pattern = _reply_pattern(["calc.py", "pkg/util.py"])
    if out.finish_reason == "length":
        assert pattern.fullmatch(out.text, partial=True), out.text
    else:
        assert pattern.fullmatch(out.text), out.text
        edits = SymbolFormat().parse(out.text)
        assert edits and all(isinstance(e, SymbolEdit) and e.path in FILES for e in edits)


def test_the_reply_may_end_right_after_a_fence(eng):
    constraint = eng.grammars.compile(GrammarSpec.symbol(FILES))
    reply = "calc.py\n```python\ndef add(a, b):\n    pass\n```"
    assert all(constraint.accept(t) for t in _tokens(eng, reply))
    assert constraint.accept(sorted(eng.eos_token_ids)[0])


def test_written_definitions_are_accepted_and_anything_else_is_not(eng):
    good = ("calc.py\n```python\nimport math\n\n@cache\ndef add(\n    a, b\n):\n    return a + b\n```\n\n"
            "pkg/util.py\n```python\n    def method(self):\n        return 1\n\n\nclass New:\n"
            "    x = 1\n```\n")
    constraint = eng.grammars.compile(GrammarSpec.symbol(FILES))
    ids = _tokens(eng, good)
    assert constraint.valid_prefix(ids) == len(ids)
    assert all(constraint.accept(t) for t in ids) and constraint.accept(sorted(eng.eos_token_ids)[0])
    for bad in ("README.md\n",  # not Python
                "calc.py\n```python\nx = 1\n",  # no definition
                "calc.py\n```python\ndef add(a, b):\n    return a\nprint(add(1, 2))\n",  # a statement after
                "calc.py\n```python\ndef add(a, b):\n    return a\n```\nThat fixes it.",  # prose after
                "calc.py\n```python\ndef add(a, b):\n    return a\n@@ -5 +5 @@\n"):  # a diff's hunk inside
        fresh = eng.grammars.compile(GrammarSpec.symbol(FILES))
        ids = _tokens(eng, bad)
        assert fresh.valid_prefix(ids) < len(ids), bad


def test_a_reply_ends_after_its_last_allowed_block(eng):
    block = "calc.py\n```python\ndef add(a, b):\n    return a + b\n```"
    constraint = eng.grammars.compile(GrammarSpec.symbol(FILES))
    assert all(constraint.accept(t) for t in _tokens(eng, "\n\n".join([block] * MAX_BLOCKS) + "\n"))
    assert constraint.valid_prefix(_tokens(eng, "calc.py")) == 0  # only the end is left
    assert constraint.accept(sorted(eng.eos_token_ids)[0])


def test_near_its_budget_a_reply_closes_its_fence_and_ends(eng):
    head = _tokens(eng, "calc.py\n```python\ndef add(a, b):\n    return a")
    constraint = eng.grammars.compile(GrammarSpec.symbol(FILES), max_tokens=len(head) + 20)
    assert all(constraint.accept(t) for t in head)
    plus = _tokens(eng, " +")[0]
    for _ in range(20):  # the body goes on until the budget calls for the close
        if not constraint.valid_prefix([plus]):
            break
        assert constraint.accept(plus)
    closing = constraint.forced_tokens()
    assert eng.tokenizer.decode(closing) == "\n```"
    assert all(constraint.accept(t) for t in closing)
    assert constraint.accept(sorted(eng.eos_token_ids)[0]) and constraint.done
    assert constraint.emitted <= len(head) + 20


def test_near_its_budget_a_reply_closes_at_the_first_line_end_where_its_code_parses(eng):
    head = _tokens(eng, "calc.py\n```python\ndef add(a, b):\n    total = (a +\n")
    constraint = eng.grammars.compile(GrammarSpec.symbol(FILES), max_tokens=len(head) + 40)
    assert all(constraint.accept(t) for t in head)
    assert constraint.forced_tokens() == []  # the bracket is open: closing here would not parse
    assert all(constraint.accept(t) for t in _tokens(eng, "             b)\n"))
    closing = constraint.forced_tokens()
    assert eng.tokenizer.decode(closing) in ("```", "\n```")
    assert all(constraint.accept(t) for t in closing) and constraint.accept(sorted(eng.eos_token_ids)[0])
    edits = SymbolFormat().parse(eng.tokenizer.decode(head + _tokens(eng, "             b)\n") + closing))
    assert [e.path for e in edits] == ["calc.py"]
    roomy = eng.grammars.compile(GrammarSpec.symbol(FILES), max_tokens=len(head) + 100)
    assert all(roomy.accept(t) for t in head + _tokens(eng, "             b)\n"))
    assert roomy.forced_tokens() == []  # far from its budget, the reply goes on


def test_a_budget_too_small_for_another_block_ends_the_reply(eng):
    block = _tokens(eng, "calc.py\n```python\ndef add(a, b):\n    return a + b\n```")
    another = _tokens(eng, "\n\ncalc.py")
    roomy = eng.grammars.compile(GrammarSpec.symbol(FILES), max_tokens=len(block) + 200)
    tight = eng.grammars.compile(GrammarSpec.symbol(FILES), max_tokens=len(block) + 30)
    for constraint in (roomy, tight):
        assert all(constraint.accept(t) for t in block)
    assert roomy.valid_prefix(another) == len(another)
    assert tight.valid_prefix(another) == 0 and tight.accept(sorted(eng.eos_token_ids)[0])


def test_without_a_python_file_there_is_nothing_to_constrain():
    with pytest.raises(ValueError, match="Python file"):
        GrammarSpec.symbol(["README.md"])


def _tokens(eng, text: str) -> list[int]:
    return eng.tokenizer.encode(text, add_special_tokens=False)
