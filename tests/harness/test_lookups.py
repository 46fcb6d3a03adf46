from deltaserve.harness import lookups
from deltaserve.harness.lookups import Lookup


def test_parse_requests_among_prose():
    reply = ("I need more context.\nVIEW src/m.py 10-40\nVIEW `src/n.py`\nVIEW src/o.py:3-4\n"
             "GREP def parse_\nthanks")
    assert lookups.parse(reply) == [Lookup("view", "src/m.py", 10, 40), Lookup("view", "src/n.py"),
                                    Lookup("view", "src/o.py", 3, 4), Lookup("grep", "def parse_")]
    assert lookups.parse("please VIEW the file") == []


def test_view_serves_numbered_ranges_and_explains_bad_paths(tmp_path):
    from deltaserve.tools.workspace import Workspace

    (tmp_path / "m.py").write_text("".join(f"line{i}\n" for i in range(1, 31)))
    ws = Workspace(tmp_path)
    out = lookups.serve(Lookup("view", "m.py", 3, 4), ws)
    assert out.splitlines()[:5] == ["VIEW m.py 3-4:", "m.py", "```", "3 | line3", "4 | line4"]
    assert "(lines 3-4 of 30)" in out
    assert "does not exist" in lookups.serve(Lookup("view", "nope.py"), ws)
    assert ".." in lookups.serve(Lookup("view", "../etc/passwd"), ws)


def test_a_form_feed_inside_a_line_keeps_the_line_numbers_true(tmp_path):
    from deltaserve.harness.prompt import render_file
    from deltaserve.tools.workspace import Workspace

    text = "import os\n\x0c\ndef f():\n    return 1  # \u2028 a line separator in a comment\n"
    (tmp_path / "m.py").write_text(text)
    out = lookups.serve(Lookup("view", "m.py", 3, 3), Workspace(tmp_path))
    assert "3 | def f():" in out and "(lines 3-3 of 4)" in out
    shown = render_file("m.py", text, numbered=True, line_numbers=(1, 2, 3, 4))
    assert "4 |     return 1" in shown
