import pytest

from jsonkit import JSONPath, PathSyntaxError, delete, query, query_one, query_paths, update
from jsonkit.core import project, redact

STORE = {
    "store": {
        "book": [
            {"category": "reference", "author": "Nigel Rees", "title": "Sayings of the Century", "price": 8.95},
            {"category": "fiction", "author": "Evelyn Waugh", "title": "Sword of Honour", "price": 12.99},
            {"category": "fiction", "author": "Herman Melville", "title": "Moby Dick", "isbn": "0-553-21311-3",
             "price": 8.99},
            {"category": "fiction", "author": "J. R. R. Tolkien", "title": "The Lord of the Rings",
             "isbn": "0-395-19395-8", "price": 22.99},
        ],
        "bicycle": {"color": "red", "price": 399},
    },
    "limits": {"cheap": 10, "category": "fiction"},
}


def test_members_and_wildcards():
    assert query(STORE, "$.store.bicycle.color") == ["red"]
    assert query(STORE, "$['store']['bicycle']['price']") == [399]
    assert query(STORE, "$.store.book[*].author")[:2] == ["Nigel Rees", "Evelyn Waugh"]
    assert len(query(STORE, "$.store.*")) == 2


def test_indexes_slices_and_unions():
    assert query(STORE, "$.store.book[-1].title") == ["The Lord of the Rings"]
    assert query(STORE, "$.store.book[0:2].price") == [8.95, 12.99]
    assert query(STORE, "$.store.book[::-2].price") == [22.99, 12.99]
    assert query(STORE, "$.store.book[0,'x',3].price") == [8.95, 22.99]


def test_descendants():
    assert len(query(STORE, "$..author")) == 4
    assert sorted(query(STORE, "$..price")) == [8.95, 8.99, 12.99, 22.99, 399]
    assert query(STORE, "$..book[2].title") == ["Moby Dick"]


def test_filters_on_current_node():
    assert query(STORE, "$.store.book[?(@.price < 10)].title") == ["Sayings of the Century", "Moby Dick"]
    assert query(STORE, "$.store.book[?@.isbn && @.price > 20].title") == ["The Lord of the Rings"]
    assert query(STORE, "$.store.book[?(!@.isbn)].author") == ["Nigel Rees", "Evelyn Waugh"]
    assert query(STORE, "$.store.book[?(@.author =~ 'J.*')].price") == [22.99]
    assert query(STORE, "$.store.book[?length(@.title) > 15].price") == [8.95, 22.99]


def test_filter_compares_with_root_value():
    assert query(STORE, "$.store.book[?(@.price < $.limits.cheap)].title") == [
        "Sayings of the Century", "Moby Dick"]


def test_filter_combines_root_and_current():
    cheap_fiction = "$.store.book[?(@.category == $.limits.category && @.price <= $.limits.cheap)].author"
    assert query(STORE, cheap_fiction) == ["Herman Melville"]
    assert query_one(STORE, "$.store.book[?(@.category != $.limits.category)].title") == "Sayings of the Century"


def test_paths_and_pointers():
    assert query_paths(STORE, "$.store.book[?(@.price > 20)]") == ["$['store']['book'][3]"]
    assert JSONPath("$..color").pointers(STORE) == ["/store/bicycle/color"]


def test_update_and_delete():
    cheaper = update(STORE, "$.store.book[*].price", lambda p: p * 2)
    assert query(cheaper, "$.store.book[0].price") == [17.9]
    assert query(STORE, "$.store.book[0].price") == [8.95]
    trimmed = delete(STORE, "$.store.book[?(@.price > 10)]")
    assert [b["title"] for b in trimmed["store"]["book"]] == ["Sayings of the Century", "Moby Dick"]
    assert redact({"user": {"password": "x", "name": "n"}}, ["$..password"]) == {"user": {"password": "***", "name": "n"}}


def test_project():
    record = project(STORE, {"bike": "$.store.bicycle.color", "authors": "$.store.book[*].author"})
    assert record["bike"] == "red" and len(record["authors"]) == 4


def test_syntax_errors():
    with pytest.raises(PathSyntaxError):
        JSONPath("store.book")
    with pytest.raises(PathSyntaxError):
        JSONPath("$.store[")
    with pytest.raises(PathSyntaxError):
        JSONPath("$.store.book[?(@..price < 10)]")
    with pytest.raises(PathSyntaxError):
        JSONPath("$[?nosuch(@)]")
