import pytest

from tinyhttp import Request


def test_full_url_merges_params():
    r = Request("get", "https://api.example.com/items?sort=name", params={"tag": ["a", "b"], "q": "x y"})
    assert r.method == "GET"
    assert r.full_url() == "https://api.example.com/items?sort=name&tag=a&tag=b&q=x+y"


def test_with_header_replaces_case_insensitively():
    r = Request("GET", "https://x.org", headers={"accept": "text/html"}).with_header("Accept", "application/json")
    assert r.headers == {"Accept": "application/json"} and r.header("ACCEPT") == "application/json"


def test_with_params_returns_a_copy():
    base = Request("GET", "https://x.org/list", params={"per_page": 10})
    page2 = base.with_params(page=2)
    assert page2.params == {"per_page": 10, "page": 2}
    assert base.params == {"per_page": 10}
    assert base.with_params(per_page=None).params == {}


def test_with_json():
    r = Request("POST", "https://x.org").with_json({"b": 1, "a": [1, 2]})
    assert r.body == b'{"a":[1,2],"b":1}' and r.header("content-type") == "application/json"


@pytest.mark.parametrize("method,url", [("FETCH", "https://x.org"), ("GET", "ftp://x.org"), ("GET", "x.org")])
def test_bad_requests(method, url):
    with pytest.raises(ValueError):
        Request(method, url)
