import pytest

from icsread import ParseError, parse_content_line, unfold_lines
from icsread.parser import parse_duration, split_text_list, unescape_text


def test_unfolding_removes_exactly_one_leading_space():
    text = "SUMMARY:long\r\n  text\r\n\tand more\r\nUID:1\r\n"
    assert unfold_lines(text) == [(1, "SUMMARY:long text" + "and more"), (4, "UID:1")]


def test_simple_line():
    line = parse_content_line("dtstart;tzid=Europe/Berlin:20240108T093000")
    assert (line.name, line.params, line.value) == ("DTSTART", {"TZID": ["Europe/Berlin"]}, "20240108T093000")


def test_value_may_contain_colons_and_semicolons():
    line = parse_content_line("DESCRIPTION:See https://example.com/a;b for details: today")
    assert line.value == "See https://example.com/a;b for details: today"


def test_quoted_parameter_with_comma():
    line = parse_content_line('ATTENDEE;CN="Doe, Jane";PARTSTAT=ACCEPTED:mailto:jane@example.com')
    assert line.params == {"CN": ["Doe, Jane"], "PARTSTAT": ["ACCEPTED"]}
    assert line.value == "mailto:jane@example.com"


def test_quoted_parameter_with_colon_and_semicolon():
    line = parse_content_line('DESCRIPTION;ALTREP="cid:part1.0001@example.org;v=2":The agenda')
    assert line.param("ALTREP") == "cid:part1.0001@example.org;v=2"
    assert line.value == "The agenda"


def test_multi_valued_parameter():
    line = parse_content_line('ATTENDEE;MEMBER="mailto:a@x.org","mailto:b@x.org";CUTYPE=GROUP:mailto:c@x.org')
    assert line.params["MEMBER"] == ["mailto:a@x.org", "mailto:b@x.org"]
    assert parse_content_line("X-TAGS;TYPE=a,b:v").params["TYPE"] == ["a", "b"]


@pytest.mark.parametrize("bad", ["NO COLON HERE", "BAD NAME:x", "DTSTART;TZID:x", ";X=1:y"])
def test_bad_lines(bad):
    with pytest.raises(ParseError):
        parse_content_line(bad, 7)


def test_text_escapes_in_one_pass():
    assert unescape_text(r"a\, b\; c\nd\\n") == "a, b; c\nd\\n"
    assert split_text_list(r"one,two\, three,,four") == ["one", "two, three", "four"]


@pytest.mark.parametrize("text,minutes", [("PT15M", 15), ("-PT10M", -10), ("P1DT2H", 26 * 60), ("P1W", 7 * 24 * 60)])
def test_durations(text, minutes):
    assert parse_duration(text).total_seconds() == minutes * 60


def test_bad_duration():
    with pytest.raises(ParseError):
        parse_duration("PT")
