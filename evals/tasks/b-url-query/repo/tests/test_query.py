import datetime as dt

import pytest

from urlkit import add_params, build_query, join_path, normalize_url, parse_query, remove_params, with_query


def test_scalars_are_escaped():
    assert build_query({"q": "tea & cake", "page": 2}) == "q=tea%20%26%20cake&page=2"


def test_none_is_dropped():
    assert build_query({"a": 1, "b": None, "c": [None, "x"]}) == "a=1&c=x"


def test_sequences_repeat_the_key():
    assert build_query({"tag": ["a", "b"], "id": (3, 4)}) == "tag=a&tag=b&id=3&id=4"
    assert build_query({"s": {"z", "y"}}) == "s=y&s=z"


def test_booleans_are_lowercase():
    assert build_query({"debug": True, "cache": False}) == "debug=true&cache=false"
    assert build_query({"flags": [True, False]}) == "flags=true&flags=false"


def test_dates_are_iso():
    assert build_query({"since": dt.date(2024, 3, 1)}) == "since=2024-03-01"


def test_sort_is_stable_for_repeated_keys():
    assert build_query([("b", 1), ("a", 2), ("b", 0)], sort=True) == "a=2&b=1&b=0"


def test_bad_keys_and_nested_values():
    with pytest.raises(TypeError):
        build_query({"": 1})
    with pytest.raises(TypeError):
        build_query({"a": [[1, 2]]})


def test_parse_query_keeps_order_and_blanks():
    assert parse_query("?a=1&b=&a=2") == {"a": ["1", "2"], "b": [""]}


def test_with_query_keeps_fragment():
    assert with_query("https://x.org/p?old=1#top", {"n": 5}) == "https://x.org/p?n=5#top"


def test_add_params_replaces_and_removes():
    url = "https://x.org/search?q=old&page=3&lang=en"
    assert add_params(url, {"q": "new", "page": None}) == "https://x.org/search?lang=en&q=new"


def test_add_params_boolean_flag():
    assert add_params("https://x.org/a?x=1", {"verbose": True}) == "https://x.org/a?x=1&verbose=true"


def test_remove_params():
    assert remove_params("http://h/p?a=1&b=2&a=3", "a") == "http://h/p?b=2"


def test_normalize_url():
    assert normalize_url("HTTPS://Example.COM:443/a?b=2&a=1&b=1") == "https://example.com/a?a=1&b=2&b=1"
    assert normalize_url("http://u:pw@Host:8080") == "http://u:pw@host:8080/"


def test_join_path():
    assert join_path("https://api.x.org/v1/?k=1", "users", "a b") == "https://api.x.org/v1/users/a%20b?k=1"
    with pytest.raises(ValueError):
        join_path("https://api.x.org", "..")
