import pytest

from tinyhttp import DEFAULT_HEADERS, Client, HTTPError


def test_get_sends_default_headers_and_params(recorder):
    client = Client("https://api.example.com/v1", transport=recorder)
    client.get("users", params={"active": "true"})
    (sent,) = recorder.requests
    assert sent.full_url() == "https://api.example.com/v1/users?active=true"
    assert sent.headers == DEFAULT_HEADERS


def test_post_json(recorder):
    Client("https://api.example.com/", transport=recorder).post("/users", json_body={"name": "ann"})
    (sent,) = recorder.requests
    assert sent.method == "POST" and sent.body == b'{"name":"ann"}'
    assert sent.header("Content-Type") == "application/json"


def test_per_request_headers_apply_to_that_request_only(recorder):
    client = Client("https://api.example.com/", transport=recorder)
    client.get("a", headers={"X-Request-Id": "r-1", "Authorization": "Bearer one-off"})
    client.get("b")
    first, second = recorder.requests
    assert first.header("X-Request-Id") == "r-1"
    assert second.header("X-Request-Id") is None and second.header("Authorization") is None


def test_bearer_token_stays_with_its_client(recorder):
    alice = Client("https://api.example.com/", transport=recorder)
    alice.set_bearer("alice-token")
    guest = Client("https://api.example.com/", transport=recorder)
    alice.get("me")
    guest.get("public")
    assert recorder.requests[0].header("Authorization") == "Bearer alice-token"
    assert recorder.requests[1].header("Authorization") is None
    assert "Authorization" not in DEFAULT_HEADERS


def test_custom_headers_are_copied():
    mine = {"User-Agent": "me/1.0"}
    client = Client("https://x.org", headers=mine)
    client.set_header("X-Team", "ops")
    assert mine == {"User-Agent": "me/1.0"}
    assert client.headers == {"User-Agent": "me/1.0", "X-Team": "ops"}


def test_errors_name_the_request(make_recorder):
    client = Client("https://api.example.com/", transport=make_recorder([(404, {"error": "nope"})]))
    with pytest.raises(HTTPError, match="GET https://api.example.com/missing failed with status 404"):
        client.get_json("missing")


def test_iter_pages_asks_for_each_page_once(make_recorder):
    recorder = make_recorder([(200, {"items": [1, 2], "next": True}), (200, {"items": [3], "next": False})])
    client = Client("https://api.example.com/", transport=recorder)
    assert list(client.iter_pages("things", page_size=2)) == [1, 2, 3]
    assert [r.params for r in recorder.requests] == [{"per_page": 2, "page": 1}, {"per_page": 2, "page": 2}]
