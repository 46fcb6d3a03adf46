import pytest

from mdtable import Table, TableOptions, display_width, from_csv, parse_pipe_table, render
from mdtable.table import describe, normalize, reformat_markdown, transpose

FRUIT = [["apple", 3, 0.5], ["kiwi", 12, 0.25]]
HEADERS = ["fruit", "qty", "price"]


def test_pipe_auto_alignment():
    assert render(FRUIT, headers=HEADERS) == (
        "| fruit | qty | price |\n"
        "|-------|----:|------:|\n"
        "| apple |   3 |   0.5 |\n"
        "| kiwi  |  12 |  0.25 |"
    )


def test_explicit_left_and_right():
    assert render(FRUIT, headers=HEADERS, align="lrl").splitlines()[1:3] == [
        "|-------|----:|-------|",
        "| apple |   3 | 0.5   |",
    ]


def test_center_alignment():
    assert render([["a", "bb"], ["ccc", "d"]], headers=["x", "y"], align="center") == (
        "|  x  |  y  |\n"
        "|:---:|:---:|\n"
        "|  a  | bb  |\n"
        "| ccc |  d  |"
    )


def test_center_alignment_per_column():
    table = Table(["name", "status"], align={"status": "c"})
    table.add_row("build", "ok")
    table.add_row("deploy", "failed")
    assert table.render().splitlines() == [
        "| name   | status |",
        "|--------|:------:|",
        "| build  |   ok   |",
        "| deploy | failed |",
    ]


def test_reformat_markdown_keeps_alignment():
    doc = "Intro\n\n| a | b |\n|:-:|--:|\n| long text | 1 |\n| x | 22 |\n\nEnd"
    assert reformat_markdown(doc) == (
        "Intro\n\n"
        "|     a     |   b |\n"
        "|:---------:|----:|\n"
        "| long text |   1 |\n"
        "|     x     |  22 |\n\nEnd"
    )


def test_unknown_alignment_rejected():
    with pytest.raises(ValueError, match="unknown alignment"):
        TableOptions(align="middle")
    with pytest.raises(TypeError):
        render(FRUIT, colour="red")


def test_pipes_are_escaped():
    out = render([["a|b", "line1\nline2"]], headers=["x", "y"])
    assert "a\\|b" in out and "line1<br>line2" in out
    headers, rows, _ = parse_pipe_table(out)
    assert rows == [["a|b", "line1\nline2"]]


def test_wide_characters_are_two_columns():
    assert display_width("日本") == 4
    assert display_width("e\u0301") == 1
    out = render([["日本", 1], ["ab", 22]], headers=["name", "n"])
    assert out.splitlines()[2] == "| 日本 |   1 |"


def test_grid_wraps_long_cells():
    out = render([["a fairly long sentence", 1]], headers=["text", "n"], style="grid", max_col_width=10)
    assert out.splitlines() == [
        "+----------+---+",
        "| text     | n |",
        "+==========+===+",
        "| a fairly | 1 |",
        "| long     |   |",
        "| sentence |   |",
        "+----------+---+",
    ]


def test_truncation_in_pipe_style():
    out = render([["abcdefghij"]], headers=["h"], max_col_width=5)
    assert "abcd…" in out


def test_simple_rst_and_html():
    assert render(FRUIT, headers=HEADERS, style="simple").splitlines()[1] == "-----  ---  -----"
    rst = render(FRUIT, headers=HEADERS, style="rst").splitlines()
    assert rst[0] == rst[2] == rst[-1] == "=====  ===  ====="
    html = render([["<b>", 1]], headers=["tag", "n"], style="html")
    assert "<td>&lt;b&gt;</td>" in html and '<td style="text-align: right">1</td>' in html


def test_input_shapes():
    assert normalize([{"a": 1}, {"b": 2}]).headers == ["a", "b"]
    assert normalize({"a": [1, 2], "b": [3]}).rows == [[1, 3], [2, None]]
    assert normalize([["h1", "h2"], [1, 2]], headers="firstrow").headers == ["h1", "h2"]


def test_builder_totals_and_sort():
    table = Table(["item", "qty"])
    table.add_rows([["bolts", 120], {"item": "nuts", "qty": 80}, ["washers", None]])
    table.sort_by("qty")
    table.add_total("qty")
    lines = table.render(style="plain").splitlines()
    assert lines[1].startswith("nuts") and lines[-1] == "Total    200"


def test_parse_pipe_table_alignments():
    headers, rows, aligns = parse_pipe_table("text\n| a | b | c |\n|---|:---:|---:|\n| 1 | 2 | 3 |\n\nmore")
    assert headers == ["a", "b", "c"] and rows == [["1", "2", "3"]]
    assert aligns == ["left", "center", "right"]
    with pytest.raises(ValueError):
        parse_pipe_table("no table here")


def test_csv_transpose_describe():
    data = from_csv("name,score\nann,3\nbob,5\n")
    assert data.rows == [["ann", 3], ["bob", 5]]
    flipped = transpose(data)
    assert flipped.headers == ["name", "ann", "bob"] and flipped.rows == [["score", 3, 5]]
    assert describe(data).rows == [["score", 2, 0, 3, 5, 4.0]]
