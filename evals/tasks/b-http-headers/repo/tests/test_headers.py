import datetime as dt

import pytest

from httphdr import (
    Headers,
    HeaderError,
    etag_matches,
    format_http_date,
    negotiate,
    parse_accept,
    parse_authorization,
    parse_cache_control,
    parse_content_disposition,
    parse_content_type,
    parse_cookie_header,
    parse_http_date,
    parse_links,
    parse_range,
)


def test_headers_case_insensitive_multimap():
    h = Headers([("Accept", "text/html"), ("X-Trace", "a")])
    h.add("accept", "application/json")
    assert h["ACCEPT"] == "text/html, application/json"
    assert h.get_all("accept") == ["text/html", "application/json"]
    h["x-trace"] = "b"
    assert h.items() == [("Accept", "text/html"), ("accept", "application/json"), ("x-trace", "b")]
    del h["Accept"]
    assert "accept" not in h and len(h) == 1


def test_headers_reject_injection_and_combined_set_cookie():
    with pytest.raises(HeaderError):
        Headers().add("X-Bad", "a\r\nInjected: 1")
    with pytest.raises(HeaderError):
        Headers().add("Bad Name", "x")
    h = Headers([("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")])
    with pytest.raises(HeaderError):
        h.get("set-cookie")


def test_parse_block_with_folding_and_round_trip():
    h = Headers.parse(b"Host: example.com\r\nX-Long: part one\r\n  part two\r\nAccept: */*\r\n\r\n")
    assert h["x-long"] == "part one part two"
    assert Headers.parse(h.to_wire()) == h
    with pytest.raises(HeaderError):
        Headers.parse("no colon here")


def test_content_type():
    media = parse_content_type('Text/HTML; Charset="UTF-8"')
    assert media.essence == "text/html" and media.charset == "UTF-8"
    assert str(parse_content_type("application/json")) == "application/json"
    with pytest.raises(HeaderError):
        parse_content_type("nonsense")


def test_content_type_quoted_boundary_with_semicolon():
    media = parse_content_type('multipart/form-data; boundary="abc;def"; charset=utf-8')
    assert media.params == {"boundary": "abc;def", "charset": "utf-8"}


def test_accept_ordering_and_negotiation():
    items = parse_accept("text/*;q=0.5, application/json, */*;q=0.1, text/html")
    assert [i.media_type.essence for i in items] == ["application/json", "text/html", "text/*", "*/*"]
    assert negotiate("text/*;q=0.5, application/json;q=0.9", ["text/html", "application/json"]) == "application/json"
    assert negotiate("image/png", ["text/html"]) is None
    assert negotiate(None, ["text/html", "text/plain"]) == "text/html"
    assert negotiate("text/html;q=0, */*", ["text/html", "text/plain"]) == "text/plain"


def test_cache_control():
    cc = parse_cache_control('max-age=60, no-cache="Set-Cookie, Authorization", must-revalidate')
    assert cc.seconds("max-age") == 60
    assert cc.directives["no-cache"] == "Set-Cookie, Authorization"
    assert cc.cacheable and not parse_cache_control("private, max-age=5").cacheable


def test_etags():
    assert etag_matches('W/"abc", "def"', '"abc"')
    assert not etag_matches('"abc"', '"xyz"')
    assert etag_matches("*", '"anything"')
    with pytest.raises(HeaderError):
        etag_matches("abc", '"abc"')


def test_http_dates_round_trip():
    moment = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
    assert moment == dt.datetime(1994, 11, 6, 8, 49, 37, tzinfo=dt.timezone.utc)
    assert format_http_date(moment) == "Sun, 06 Nov 1994 08:49:37 GMT"
    with pytest.raises(HeaderError):
        parse_http_date("yesterday")


def test_content_disposition_filename_forms():
    cd = parse_content_disposition("attachment; filename=report.pdf")
    assert cd.is_attachment and cd.filename == "report.pdf"
    cd = parse_content_disposition("attachment; filename=\"old.txt\"; filename*=UTF-8''na%C3%AFve%20file.txt")
    assert cd.filename == "naïve file.txt"
    assert parse_content_disposition('inline; filename="../../etc/passwd"').filename == "passwd"


def test_content_disposition_quoted_semicolon():
    cd = parse_content_disposition('attachment; filename="Q3 report; final.pdf"; size=1200')
    assert cd.filename == "Q3 report; final.pdf"
    assert cd.params["size"] == "1200"


def test_ranges():
    assert [(r.start, r.end) for r in parse_range("bytes=0-99, 200-, -50", 1000)] == [(0, 99), (200, 999), (950, 999)]
    assert parse_range("bytes=900-2000", 1000)[0].content_range(1000) == "bytes 900-999/1000"
    for bad in ("items=0-1", "bytes=5-1", "bytes=abc", "bytes=2000-"):
        with pytest.raises(HeaderError):
            parse_range(bad, 1000)


def test_cookie_header():
    assert parse_cookie_header("sid=abc123; theme=dark; sid=older") == {"sid": "abc123", "theme": "dark"}


def test_cookie_header_quoted_value():
    assert parse_cookie_header('prefs="a;b"; lang=en') == {"prefs": "a;b", "lang": "en"}


def test_links():
    value = '<https://api.x/items?page=2&per=10,20>; rel="next", <https://api.x/items?page=9>; rel="last prev"'
    assert parse_links(value) == {
        "next": "https://api.x/items?page=2&per=10,20",
        "last": "https://api.x/items?page=9",
        "prev": "https://api.x/items?page=9",
    }


def test_authorization():
    assert parse_authorization("Basic dXNlcjpwQHNzOndvcmQ=") == ("basic", ("user", "p@ss:word"))
    assert parse_authorization("Bearer tok.en") == ("bearer", "tok.en")
    with pytest.raises(HeaderError):
        parse_authorization("Basic !!!")
