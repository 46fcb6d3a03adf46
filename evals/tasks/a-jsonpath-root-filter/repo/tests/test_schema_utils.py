import pytest

from jsonkit import (
    Document,
    SchemaValidator,
    ValidationFailed,
    canonical_dumps,
    deep_merge,
    flatten,
    unflatten,
    validate,
)
from jsonkit.core import diff_by_key, fill_defaults, infer_schema, render_template

USER_SCHEMA = {
    "type": "object",
    "required": ["id", "email"],
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "role": {"enum": ["admin", "user"], "default": "user"},
        "address": {"$ref": "#/$defs/address"},
    },
    "additionalProperties": False,
    "$defs": {"address": {"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}}},
}


def test_valid_document():
    validate({"id": 1, "email": "a@b.io", "tags": ["x"], "address": {"city": "Oslo"}}, USER_SCHEMA)


def test_collects_all_errors():
    issues = SchemaValidator(USER_SCHEMA).errors({"id": 0, "tags": ["x", "x"], "extra": 1, "address": {}})
    assert sorted(i.keyword for i in issues) == ["additionalProperties", "minimum", "required", "required",
                                                 "uniqueItems"]
    with pytest.raises(ValidationFailed):
        validate({"id": "1", "email": "nope"}, USER_SCHEMA)


def test_combinators():
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 5}]}
    assert SchemaValidator(schema).is_valid(2)
    assert not SchemaValidator(schema).is_valid(7)
    cond = {"if": {"properties": {"kind": {"const": "a"}}}, "then": {"required": ["x"]}}
    assert not SchemaValidator(cond).is_valid({"kind": "a"})


def test_defaults_and_inference():
    assert fill_defaults({"id": 1}, USER_SCHEMA)["role"] == "user"
    schema = infer_schema([{"a": 1, "b": "x"}, {"a": 2.5}])
    assert schema["properties"]["a"]["type"] == "number" and schema["required"] == ["a"]


def test_flatten_round_trip():
    doc = {"a": {"b": [1, {"c": 2}]}, "d": {}}
    flat = flatten(doc)
    assert flat == {"a.b.0": 1, "a.b.1.c": 2, "d": {}}
    assert unflatten(flat) == doc


def test_deep_merge_and_canonical():
    merged = deep_merge({"a": {"x": 1}, "l": [1]}, {"a": {"y": 2}, "l": [1, 2]}, lists="unique")
    assert merged == {"a": {"x": 1, "y": 2}, "l": [1, 2]}
    assert canonical_dumps({"b": 1.0, "a": [True, None]}) == '{"a":[true,null],"b":1}'


def test_template_and_keyed_diff():
    assert render_template({"to": "${/user/email}", "msg": "Hi ${/user/name}"},
                           {"user": {"email": "a@b.io", "name": "Ann"}}) == {"to": "a@b.io", "msg": "Hi Ann"}
    diff = diff_by_key([{"id": 1, "v": 1}, {"id": 2}], [{"id": 1, "v": 2}, {"id": 3}], "/id")
    assert diff.added == [{"id": 3}] and diff.removed == [{"id": 2}]
    assert diff.changed == {1: [{"op": "replace", "path": "/v", "value": 2}]}


def test_document_undo_redo():
    doc = Document({"title": "Draft", "tags": []}, schema={"properties": {"title": {"type": "string"}}})
    doc.set("/title", "Final")
    doc.set("/tags/-", "news")
    assert doc.data == {"title": "Final", "tags": ["news"]}
    assert doc.undo() and doc.undo()
    assert doc.data == {"title": "Draft", "tags": []}
    assert doc.redo()
    assert doc.get("/title") == "Final"
    with pytest.raises(ValidationFailed):
        doc.set("/title", 5)
