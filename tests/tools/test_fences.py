"""The one code-fence scanner: info strings, tildes, nested fences, unclosed blocks, indentation."""

import pytest

from deltaserve.tools.fences import fence_for, fence_line, fenced_blocks


def test_fence_line_reads_marker_indent_and_info():
    fence = fence_line("  ```python src/a.py")
    assert (fence.marker, fence.indent, fence.info, fence.words) == (
        "```",
        2,
        "python src/a.py",
        ["src/a.py"],
    )
    assert fence_line("~~~~").marker == "~~~~" and fence_line("~~~~").words == []
    assert fence_line("```diff:src/a.py").words == ["src/a.py"]


@pytest.mark.parametrize("line", ["``", "text ```", "```inline``` code", "-```", "+~~~"])
def test_not_a_fence(line):
    assert fence_line(line) is None


def test_max_indent_refuses_indented_fences():
    assert fence_line(" ```", max_indent=0) is None
    assert fence_line("```", max_indent=0) is not None


def test_blocks_with_info_and_prose_between():
    lines = "intro\n```python\nx = 1\n```\nmiddle\n~~~\ny\n~~~".split("\n")
    blocks = fenced_blocks(lines)
    assert [(b.fence.info, b.start, b.end, b.body) for b in blocks] == [
        ("python", 1, 3, ["x = 1"]), ("", 5, 7, ["y"])]


def test_longer_fence_holds_shorter_ones_and_other_characters():
    lines = ["````markdown", "```python", "x", "```", "~~~", "````"]
    (block,) = fenced_blocks(lines)
    assert block.body == ["```python", "x", "```", "~~~"] and block.end == 5


def test_closing_fence_has_no_info_and_may_be_longer():
    lines = ["```", "```python", "a", "`````", "after"]
    (block,) = fenced_blocks(lines)
    assert block.body == ["```python", "a"] and block.end == 3


def test_unclosed_block_runs_to_the_end():
    lines = ["prose", "```diff", "--- a/x", "+++ b/x"]
    (block,) = fenced_blocks(lines)
    assert block.end == len(lines) and block.body == ["--- a/x", "+++ b/x"]


def test_context_lines_are_not_fences_when_indentation_is_refused():
    lines = ["```diff", " ```", "+```", "```"]
    (block,) = fenced_blocks(lines, max_indent=0)
    assert block.body == [" ```", "+```"]


@pytest.mark.parametrize(("lines", "fence"), [
    (["x = 1"], "```"), (["```"], "````"), (["  ````python", "```"], "`````"), (["~~~~~"], "```"),
    (["a ``` b"], "```"),
])
def test_fence_for_is_longer_than_any_fence_inside(lines, fence):
    assert fence_for(lines) == fence
    (block,) = fenced_blocks([fence, *lines, fence])
    assert block.body == lines


DOCSTRING_EXAMPLE = ['class Client:', '    """Usage:', '', '    ```python', '    client = Client()',
                     '    ```', '    """', '', '    def close(self):', '        pass']


def test_a_docstrings_own_fences_are_code_not_the_end_of_the_block():
    """CommonMark: a closing fence is indented at most 3 spaces deeper than its opening (replayed httpx
    commits, whose docstrings hold Markdown examples, were cut at the docstring's ``` and refused)."""
    (block,) = fenced_blocks(["src/client.py", "```python", *DOCSTRING_EXAMPLE, "```", "Done."])
    assert block.body == DOCSTRING_EXAMPLE
    (item,) = fenced_blocks(["1. The fix:", "   ```python", "   x = 1", "   ```"])  # in a list item
    assert item.body == ["   x = 1"] and item.end == 3


def test_a_block_only_a_deeper_fence_closes_ends_there():
    lines = ["```python", "def f():", "    pass", "    ```", "", "Done."]  # a sloppily indented closing
    (block,) = fenced_blocks(lines)
    assert block.body == ["def f():", "    pass"] and block.end == 3
