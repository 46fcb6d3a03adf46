import pytest

from deltaserve.harness.prompt import Prompt, render_file


def test_messages_only_grow_and_cannot_be_rewritten_from_outside():
    p = Prompt("FORMAT", "CONTEXT", "TASK")
    first = p.messages
    assert [m["role"] for m in first] == ["system", "user"]
    assert first[0]["content"].endswith("FORMAT") and first[1]["content"] == "CONTEXT\n\nTASK"
    first[0]["content"] = "tampered"
    p.add_reply("  \nreply one")
    p.add_feedback("feedback one")
    second = p.messages
    assert second[0]["content"].endswith("FORMAT")
    assert second[2] == {"role": "assistant", "content": "reply one"}  # leading whitespace dropped
    assert second[:2] == Prompt("FORMAT", "CONTEXT", "TASK").messages


def test_roles_alternate():
    p = Prompt("F", "C", "T")
    with pytest.raises(ValueError, match="two user messages"):
        p.add_feedback("x")
    p.add_reply("r")
    with pytest.raises(ValueError, match="two assistant messages"):
        p.add_reply("r2")


def test_render_file_numbered_and_plain():
    assert render_file("a.py", "x = 1\ny = 2\n", numbered=False) == "a.py\n```\nx = 1\ny = 2\n```"
    numbered = render_file("a.py", "x\n" * 10, numbered=True, first_line=5)
    assert numbered.splitlines()[2:4] == [" 5 | x", " 6 | x"]
