"""docs/harness.md's ```python examples run as written: each on a fresh copy of the conftest project (the
docs' `path/to/project`), the model call scripted with litellm's mock_response."""

from pathlib import Path

import pytest

from deltaserve.harness import client as harness_client
from deltaserve.tools.fences import fenced_blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "harness.md"
REPLY = "calc.py\n```\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```"
FIXED = "def add(a, b):\n    return a + b\n"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line, code) of every block fenced as python, by CommonMark's rules (a ```` fence holds ```)."""
    lines = text.split("\n")
    return [(block.start + 2, "\n".join(block.body) + "\n") for block in fenced_blocks(lines)
            if block.fence.info.split()[:1] == ["python"]]


BLOCKS = python_blocks(DOC.read_text())


def test_the_docs_hold_the_library_examples():
    codes = [code for _, code in BLOCKS]
    assert any("price(parsed" in code and "TokenCounter(" in code for code in codes)
    assert any("complete(" in code for code in codes) and any("PrefixMonitor" in code for code in codes)


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line{line}" for line, _ in BLOCKS])
def test_docs_example_runs(line, code, project, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real = harness_client.complete
    monkeypatch.setattr(harness_client, "complete", lambda *a, **kw: real(*a, **kw, mock_response=REPLY))
    namespace: dict = {}
    # blank lines keep the docs' line numbers in a traceback
    exec(compile("\n" * (line - 1) + code.replace("path/to/project", str(project)), str(DOC), "exec"),
         namespace)
    out = capsys.readouterr().out
    if "path/to/project" in code:
        assert (project / "calc.py").read_text().startswith(FIXED)
    if "price(parsed" in code and "cost" in namespace:
        cost = namespace["cost"]
        assert cost.edit_tokens > 0 and cost.decode_saved == cost.whole_file_tokens - cost.edit_tokens
        assert "search_replace ('calc.py',) ()" in out
    if "RunReport" in code:
        assert '"decode_saved"' in out
    if "PrefixMonitor" in code:
        assert namespace["brk"] is None and out == ""  # our appended messages never break the prefix
