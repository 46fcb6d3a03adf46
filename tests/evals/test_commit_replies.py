"""evals/commit_replies: a real change written as a symbol reply, or None where the format cannot say it."""

from __future__ import annotations

from deltaserve.evals.commit_replies import loose_udiff_reply, symbol_reply
from deltaserve.tools.symbols import replace_symbols


def _code(reply: str) -> str:
    return reply.split("```python\n", 1)[1].rsplit("```", 1)[0]


def test_a_class_whose_docstring_changed_in_whitespace_only_is_written_whole():
    """Not as its class line alone (a replayed rich commit reformatted a docstring: the reply was an empty
    class, invalid Python)."""
    old = 'class Tree:\n    """A tree.\n    \n    More.\n    """\n\n    def f(self):\n        pass\n'
    new = old.replace("    \n", "\n")
    reply = symbol_reply("tree.py", old, new)
    assert _code(reply) == new and replace_symbols(old, _code(reply)) == new


def test_a_definition_that_lost_its_decorators_cannot_be_said():
    """The format keeps a definition's decorators when its new version brings none (a replayed pluggy
    commit removed a test's filterwarnings mark: the reply kept it)."""
    old = "@mark\ndef test_a():\n    pass\n\n\nclass A:\n    @staticmethod\n    def f():\n        pass\n"
    assert symbol_reply("t.py", old, old.replace("@mark\n", "")) is None
    assert symbol_reply("t.py", old, old.replace("    @staticmethod\n", "")) is None
    assert symbol_reply("t.py", old, old.replace("@mark", "@other")) is not None


def test_the_loose_diff_keeps_each_lines_text_and_ending():
    """Only git's headers change: a CRLF file's CRs and a form feed stay in their lines."""
    diff = ("diff --git a/make.bat b/make.bat\nnew file mode 100644\nindex 0000000..153be5e\n--- /dev/null\n"
            "+++ b/make.bat\n@@ -0,0 +1,2 @@\n+@ECHO OFF\r\n+\x0c\r\n")
    assert loose_udiff_reply(diff) == ("```diff\ndiff --git a/make.bat b/make.bat\n--- /dev/null\n"
                                       "+++ make.bat\n@@ ... @@\n+@ECHO OFF\r\n+\x0c\r\n```\n")


def test_a_class_that_lost_its_own_statements_or_docstring_cannot_be_said():
    """The format keeps what a class is written without (a replayed scrapy commit removed two class
    attributes: the reply kept them)."""
    old = 'class E:\n    """Doc."""\n\n    FORMAT = "%Y"\n\n    def f(self):\n        return self.FORMAT\n'
    without_attribute = old.replace('    FORMAT = "%Y"\n\n', "").replace("self.FORMAT", "1")
    assert symbol_reply("e.py", old, without_attribute) is None
    assert symbol_reply("e.py", old, old.replace('    """Doc."""\n\n', "")) is None
    assert symbol_reply("e.py", old, old.replace('"%Y"', '"%m"')) is not None
