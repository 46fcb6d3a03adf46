import pytest

from jsonkit import (
    PatchError,
    PatchTestFailed,
    PointerError,
    apply_patch,
    json_equal,
    make_merge_patch,
    make_patch,
    merge_patch,
    resolve,
    set_pointer,
)
from jsonkit.core import resolve_relative

DOC = {"foo": ["bar", "baz"], "": 0, "a/b": 1, "m~n": 8, "nested": {"k": [1, {"deep": True}]}}


def test_resolve_rfc6901_examples():
    assert resolve(DOC, "") == DOC
    assert resolve(DOC, "/foo/0") == "bar"
    assert resolve(DOC, "/") == 0
    assert resolve(DOC, "/a~1b") == 1
    assert resolve(DOC, "/m~0n") == 8
    assert resolve(DOC, "/nested/k/1/deep") is True
    with pytest.raises(PointerError):
        resolve(DOC, "/foo/2")
    with pytest.raises(PointerError):
        resolve(DOC, "/foo/01")


def test_set_pointer_creates_path_and_copies():
    result = set_pointer({"a": 1}, "/b/c", [1])
    assert result == {"a": 1, "b": {"c": [1]}}
    assert set_pointer({"x": [1, 2]}, "/x/-", 3) == {"x": [1, 2, 3]}


def test_apply_patch_operations():
    doc = {"a": {"b": 1}, "list": [1, 2, 3]}
    patch = [
        {"op": "add", "path": "/list/1", "value": 9},
        {"op": "remove", "path": "/list/0"},
        {"op": "replace", "path": "/a/b", "value": 2},
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "move", "from": "/c/b", "path": "/d"},
        {"op": "test", "path": "/d", "value": 2.0},
    ]
    assert apply_patch(doc, patch) == {"a": {"b": 2}, "list": [9, 2, 3], "c": {}, "d": 2}
    assert doc == {"a": {"b": 1}, "list": [1, 2, 3]}


def test_failed_patch_is_atomic():
    doc = {"a": 1}
    with pytest.raises(PatchTestFailed) as info:
        apply_patch(doc, [{"op": "replace", "path": "/a", "value": 5}, {"op": "test", "path": "/a", "value": 1}])
    assert info.value.index == 1
    with pytest.raises(PatchError):
        apply_patch(doc, [{"op": "move", "from": "/a", "path": "/a/b"}])
    with pytest.raises(PatchError):
        apply_patch(doc, [{"op": "jump", "path": "/a"}])
    assert doc == {"a": 1}


def test_make_patch_round_trip():
    source = {"name": "x", "tags": ["a", "b", "c"], "meta": {"v": 1, "old": True}}
    target = {"name": "y", "tags": ["a", "c", "d"], "meta": {"v": 2}, "new": None}
    patch = make_patch(source, target)
    assert json_equal(apply_patch(source, patch), target)
    assert make_patch(target, target) == []


def test_merge_patch_rfc7396():
    target = {"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"}, "tags": ["example"]}
    patch = {"title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": None}, "tags": ["x"]}
    assert merge_patch(target, patch) == {
        "title": "Hello!", "author": {"givenName": "John"}, "tags": ["x"], "phoneNumber": "+01-123-456-7890"}
    assert merge_patch(target, make_merge_patch(target, {"title": "T"})) == {"title": "T"}


def test_json_equal():
    assert json_equal({"a": 1, "b": [1.0]}, {"b": [1], "a": 1.0})
    assert not json_equal(True, 1)


def test_relative_pointer():
    doc = {"foo": ["bar", "baz"], "highly": {"nested": {"objects": True}}}
    assert resolve_relative(doc, "/foo/1", "0") == "baz"
    assert resolve_relative(doc, "/foo/1", "1/0") == "bar"
    assert resolve_relative(doc, "/foo/1", "0-1") == "bar"
    assert resolve_relative(doc, "/foo/1", "0#") == 1
    assert resolve_relative(doc, "/highly/nested", "0/objects") is True
