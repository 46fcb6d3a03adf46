import pytest

from confschema import ConfigError, SchemaError, Validator, apply_defaults, describe_schema, format_path, load_config, validate

SERVICE = {
    "type": "object",
    "$defs": {
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "server": {
            "type": "object",
            "properties": {"host": {"type": "string", "format": "hostname"}, "port": {"$ref": "#/$defs/port"}},
            "required": ["host"],
            "additionalProperties": False,
        },
    },
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "port": {"$ref": "#/$defs/port", "default": 8080},
        "debug": {"type": "boolean", "default": False},
        "servers": {"type": "array", "items": {"$ref": "#/$defs/server"}, "minItems": 1},
        "timeout": {"type": "string", "format": "duration", "default": "30s"},
        "log": {
            "type": "object",
            "properties": {"level": {"enum": ["debug", "info", "warning", "error"], "default": "info"}},
            "default": {},
        },
    },
    "required": ["name", "servers"],
    "additionalProperties": False,
}


def messages(instance, schema):
    return [str(issue) for issue in validate(instance, schema)]


def test_format_path():
    assert format_path(("servers", 1, "port")) == "servers[1].port"
    assert format_path(()) == "<root>"
    assert format_path(("env", "MY VAR")) == "env['MY VAR']"


def test_types_and_bool_is_not_integer():
    assert messages(True, {"type": "integer"}) == ["<root>: expected integer, got boolean"]
    assert validate(3.0, {"type": "integer"}) == []
    assert validate(None, {"type": ["string", "null"]}) == []


def test_numbers_and_strings():
    schema = {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.5}
    assert validate(2.5, schema) == []
    assert [i.keyword for i in validate(0, schema)] == ["exclusiveMinimum"]
    assert [i.keyword for i in validate(0.3, schema)] == ["multipleOf"]
    assert [i.keyword for i in validate("ab", {"type": "string", "minLength": 3, "pattern": "^[a-z]+$"})] == ["minLength"]


def test_formats():
    assert validate("db-1.internal", {"format": "hostname"}) == []
    assert validate("-bad-.host", {"format": "hostname"}) != []
    assert validate("10.0.0.300", {"format": "ipv4"}) != []
    assert validate("1h30m", {"format": "duration"}) == []
    assert validate("2024-02-30", {"format": "date"}) != []


def test_arrays():
    schema = {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "uniqueItems": True}
    assert validate(["x", 1, 2], schema) == []
    assert messages(["x", 1, 1], schema) == ["[2]: duplicates an earlier item"]
    assert messages(["x", "y"], schema) == ["[1]: expected integer, got string"]


def test_objects_and_typo_hint():
    schema = {"type": "object", "properties": {"timeout": {}}, "additionalProperties": False}
    assert messages({"timeuot": 1}, schema) == ["timeuot: unknown property (did you mean 'timeout'?)"]
    dependent = {"dependentRequired": {"tls_cert": ["tls_key"]}}
    assert messages({"tls_cert": "a.pem"}, dependent) == ["tls_key: is required when 'tls_cert' is set"]


def test_combinators():
    schema = {"oneOf": [{"type": "integer"}, {"type": "number", "maximum": 10}]}
    assert [i.keyword for i in validate(5, schema)] == ["oneOf"]  # 5 matches both
    assert validate(10.5, {"anyOf": [{"type": "string"}, {"minimum": 10}]}) == []
    cond = {"if": {"properties": {"tls": {"const": True}}}, "then": {"required": ["cert"]}}
    assert messages({"tls": True}, cond) == ["cert: is required"]
    assert validate({"tls": False}, cond) == []


def test_refs_into_defs():
    good = {"name": "api", "servers": [{"host": "a.example", "port": 443}]}
    assert validate(good, SERVICE) == []
    bad = {"name": "api", "port": 70000, "servers": [{"host": "a.example", "port": 0}]}
    assert messages(bad, SERVICE) == [
        "port: 70000 is greater than the maximum 65535",
        "servers[0].port: 0 is less than the minimum 1",
    ]


def test_every_issue_is_reported():
    bad = {"name": "", "servers": [{"port": "80"}, {"host": "ok", "extra": 1}], "colour": "red"}
    assert messages(bad, SERVICE) == [
        "name: must be at least 1 characters",
        "servers[0].host: is required",
        "servers[0].port: expected integer, got string",
        "servers[1].extra: unknown property",
        "colour: unknown property",
    ]


def test_schema_errors():
    for bad in ({"type": "text"}, {"minimun": 1}, {"$ref": "#/$defs/missing"}, {"format": "postcode"}, {"pattern": "("}):
        with pytest.raises(SchemaError):
            Validator(bad)


def test_apply_defaults_copies():
    config = apply_defaults({"name": "x", "servers": []}, SERVICE)
    assert config["port"] == 8080 and config["debug"] is False and config["log"] == {"level": "info"}
    other = apply_defaults({"name": "y", "servers": []}, SERVICE)
    other["log"]["level"] = "error"
    assert config["log"]["level"] == "info"


def test_load_config_with_environment():
    data = {"name": "api", "servers": [{"host": "a.example"}]}
    environ = {"APP_PORT": "9090", "APP_DEBUG": "yes", "APP_LOG__LEVEL": "debug", "OTHER": "x"}
    config = load_config(data, SERVICE, environ=environ)
    assert (config["port"], config["debug"], config["log"]["level"]) == (9090, True, "debug")


def test_load_config_raises_with_all_issues():
    with pytest.raises(ConfigError) as info:
        load_config({"servers": []}, SERVICE, environ={"APP_PORT": "nope"})
    assert [str(i) for i in info.value.issues] == [
        "name: is required",
        "servers: needs at least 1 items, has 0",
        "port: expected integer, got string",
    ]


def test_describe_schema():
    table = describe_schema(SERVICE).splitlines()
    assert table[0].startswith("| option | type |")
    assert "| `port` | integer | no | `8080` | >= 1, <= 65535 |  |" in table
    assert "| `servers[].host` | string | yes |  | hostname format |  |" in table
    assert "| `log.level` | `'debug'` \\| `'info'` \\| `'warning'` \\| `'error'` | no | `'info'` |  |  |" in table
