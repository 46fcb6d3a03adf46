"""Validate configuration data against a schema written in a subset of JSON Schema (2020-12).

Supported keywords:

* any value: ``type`` (one or a list), ``enum``, ``const``, ``allOf``, ``anyOf``, ``oneOf``, ``not``,
  ``if`` / ``then`` / ``else``, ``$ref`` (local pointers such as ``#/$defs/port``), ``default``,
  ``title``, ``description``, ``deprecated``;
* numbers: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``, ``multipleOf``;
* strings: ``minLength``, ``maxLength``, ``pattern``, ``format`` (see `FORMATS`);
* arrays: ``items``, ``prefixItems``, ``minItems``, ``maxItems``, ``uniqueItems``, ``contains``;
* objects: ``properties``, ``required``, ``additionalProperties``, ``patternProperties``,
  ``propertyNames``, ``minProperties``, ``maxProperties``, ``dependentRequired``.

Validation never stops at the first problem: `Validator.iter_issues` yields every `Issue`, each with the
path to the offending value (``servers[1].port``) so a user can fix a whole file in one go.

`load_config` is the usual entry point: it layers environment overrides over the file's data, fills in
defaults and raises `ConfigError` listing every issue.
"""

from __future__ import annotations

import copy
import datetime as dt
import ipaddress
import math
import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

Path = tuple[str | int, ...]
Schema = Mapping[str, Any]

JSON_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


class SchemaError(Exception):
    """The schema itself is malformed (unknown keyword, bad $ref, wrong keyword value)."""


@dataclass(frozen=True)
class Issue:
    """One validation failure."""

    path: Path
    message: str
    keyword: str

    def __str__(self) -> str:
        return f"{format_path(self.path)}: {self.message}"


class ConfigError(ValueError):
    """Configuration data does not match its schema; `issues` lists every problem."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        lines = "\n".join(f"  - {issue}" for issue in issues)
        super().__init__(f"{len(issues)} configuration problem(s):\n{lines}")


def format_path(path: Path) -> str:
    """('servers', 1, 'port') -> 'servers[1].port'; the empty path is '<root>'."""
    if not path:
        return "<root>"
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def json_type(value: Any) -> str:
    """The JSON type name of a Python value (bool is not an integer; 3.0 is an integer)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def is_type(value: Any, name: str) -> bool:
    actual = json_type(value)
    return actual == name or (name == "number" and actual == "integer")


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: 1 == 1.0, but True != 1, and containers compare element-wise."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return a == b


# --- formats -------------------------------------------------------------------------------------

_HOSTNAME_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DURATION = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?(?:(\d+)ms)?$")


def _is_hostname(value: str) -> bool:
    if not value or len(value) > 253:
        return False
    return all(_HOSTNAME_LABEL.match(label) for label in value.rstrip(".").split("."))


def _is_ip(value: str, version: int) -> bool:
    try:
        return ipaddress.ip_address(value).version == version
    except ValueError:
        return False


def _is_uri(value: str) -> bool:
    parts = urlsplit(value)
    return bool(parts.scheme) and bool(parts.netloc or parts.path) and " " not in value


def _parses(parser: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            parser(value)
        except ValueError:
            return False
        return True

    return check


def parse_duration(text: str) -> dt.timedelta:
    """Config-style durations: '90s', '1h30m', '2d', '250ms'."""
    match = _DURATION.match(text.strip())
    if not match or not any(match.groups()):
        raise ValueError(f"invalid duration {text!r}")
    days, hours, minutes, seconds, millis = (float(g) if g else 0.0 for g in match.groups())
    return dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds, milliseconds=millis)


def _is_regex(value: str) -> bool:
    try:
        re.compile(value)
    except re.error:
        return False
    return True


FORMATS: dict[str, Callable[[str], bool]] = {
    "email": lambda v: bool(_EMAIL.match(v)),
    "hostname": _is_hostname,
    "ipv4": lambda v: _is_ip(v, 4),
    "ipv6": lambda v: _is_ip(v, 6),
    "uri": _is_uri,
    "date": _parses(dt.date.fromisoformat),
    "date-time": _parses(lambda v: dt.datetime.fromisoformat(v.replace("Z", "+00:00"))),
    "time": _parses(dt.time.fromisoformat),
    "duration": _parses(parse_duration),
    "regex": _is_regex,
    "uuid": _parses(uuid.UUID),
}


# --- schema checking and $ref --------------------------------------------------------------------

KNOWN_KEYWORDS = {
    "$schema", "$id", "$defs", "definitions", "$ref", "$comment", "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "type", "enum", "const", "allOf", "anyOf", "oneOf",
    "not", "if", "then", "else", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "pattern", "format", "items", "prefixItems", "minItems", "maxItems",
    "uniqueItems", "contains", "properties", "required", "additionalProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "dependentRequired",
}
_SUBSCHEMA_KEYWORDS = ("not", "if", "then", "else", "items", "contains", "additionalProperties", "propertyNames")
_SUBSCHEMA_LIST_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAP_KEYWORDS = ("properties", "patternProperties", "$defs", "definitions")


def resolve_pointer(document: Schema, ref: str) -> Schema:
    """Follow a local JSON pointer such as '#/$defs/port' inside `document`."""
    if ref == "#":
        return document
    if not ref.startswith("#/"):
        raise SchemaError(f"only local references are supported, got {ref!r}")
    node: Any = document
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise SchemaError(f"cannot resolve {ref!r}")
    if not isinstance(node, (Mapping, bool)):
        raise SchemaError(f"{ref!r} does not point at a schema")
    return node


def check_schema(schema: Any, root: Schema | None = None, where: str = "#") -> None:
    """Raise SchemaError for unknown keywords, bad keyword values and dangling $refs."""
    root = schema if root is None else root
    if isinstance(schema, bool):
        return
    if not isinstance(schema, Mapping):
        raise SchemaError(f"{where}: a schema must be an object or a boolean")
    unknown = set(schema) - KNOWN_KEYWORDS
    if unknown:
        raise SchemaError(f"{where}: unknown keyword(s) {sorted(unknown)}")
    types = schema.get("type", [])
    for name in [types] if isinstance(types, str) else types:
        if name not in JSON_TYPES:
            raise SchemaError(f"{where}: unknown type {name!r}")
    if "format" in schema and schema["format"] not in FORMATS:
        raise SchemaError(f"{where}: unknown format {schema['format']!r}")
    if "pattern" in schema and not _is_regex(schema["pattern"]):
        raise SchemaError(f"{where}: invalid pattern {schema['pattern']!r}")
    if "multipleOf" in schema and not (is_type(schema["multipleOf"], "number") and schema["multipleOf"] > 0):
        raise SchemaError(f"{where}: multipleOf must be a positive number")
    if "required" in schema and not all(isinstance(r, str) for r in schema["required"]):
        raise SchemaError(f"{where}: required must list property names")
    if "$ref" in schema:
        resolve_pointer(root, schema["$ref"])
    for key in _SUBSCHEMA_KEYWORDS:
        if key in schema:
            check_schema(schema[key], root, f"{where}/{key}")
    for key in _SUBSCHEMA_LIST_KEYWORDS:
        for index, sub in enumerate(schema.get(key, [])):
            check_schema(sub, root, f"{where}/{key}/{index}")
    for key in _SUBSCHEMA_MAP_KEYWORDS:
        for name, sub in schema.get(key, {}).items():
            if key == "patternProperties" and not _is_regex(name):
                raise SchemaError(f"{where}/{key}: invalid pattern {name!r}")
            check_schema(sub, root, f"{where}/{key}/{name}")


# --- the validator -------------------------------------------------------------------------------


class Validator:
    """Validates instances against one (checked) schema.

    >>> Validator({"type": "integer", "minimum": 1}).is_valid(0)
    False
    """

    def __init__(self, schema: Schema | bool, *, check_formats: bool = True) -> None:
        check_schema(schema)
        self.schema = schema
        self.check_formats = check_formats
        self._patterns: dict[str, re.Pattern[str]] = {}

    def _regex(self, pattern: str) -> re.Pattern[str]:
        if pattern not in self._patterns:
            self._patterns[pattern] = re.compile(pattern)
        return self._patterns[pattern]

    # public API

    def iter_issues(self, instance: Any) -> Iterator[Issue]:
        yield from self._descend(instance, self.schema, ())

    def issues(self, instance: Any) -> list[Issue]:
        return list(self.iter_issues(instance))

    def is_valid(self, instance: Any) -> bool:
        return next(self.iter_issues(instance), None) is None

    def validate(self, instance: Any) -> None:
        """Raise ConfigError listing every issue, if there are any."""
        issues = self.issues(instance)
        if issues:
            raise ConfigError(issues)

    # core

    def _descend(self, instance: Any, schema: Schema | bool, path: Path) -> Iterator[Issue]:
        if schema is True:
            return
        if schema is False:
            yield Issue(path, "no value is allowed here", "false")
            return
        if "$ref" in schema:
            yield from self._descend(instance, resolve_pointer(schema, schema["$ref"]), path)
        yield from self._check_any(instance, schema, path)
        kind = json_type(instance)
        if kind in ("integer", "number"):
            yield from self._check_number(instance, schema, path)
        elif kind == "string":
            yield from self._check_string(instance, schema, path)
        elif kind == "array":
            yield from self._check_array(instance, schema, path)
        elif kind == "object":
            yield from self._check_object(instance, schema, path)

    def _check_any(self, instance: Any, schema: Schema, path: Path) -> Iterator[Issue]:
        if "type" in schema:
            allowed = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
            if not any(is_type(instance, t) for t in allowed):
                yield Issue(path, f"expected {' or '.join(allowed)}, got {json_type(instance)}", "type")
                return  # further checks would only repeat the same complaint
        if "enum" in schema and not any(json_equal(instance, option) for option in schema["enum"]):
            options = ", ".join(repr(o) for o in schema["enum"])
            yield Issue(path, f"{instance!r} is not one of {options}", "enum")
        if "const" in schema and not json_equal(instance, schema["const"]):
            yield Issue(path, f"must be {schema['const']!r}", "const")
        for sub in schema.get("allOf", []):
            yield from self._descend(instance, sub, path)
        if "anyOf" in schema:
            if not any(self._matches(instance, sub, path) for sub in schema["anyOf"]):
                yield Issue(path, "does not match any of the allowed alternatives", "anyOf")
        if "oneOf" in schema:
            matched = sum(1 for sub in schema["oneOf"] if self._matches(instance, sub, path))
            if matched != 1:
                yield Issue(path, f"must match exactly one alternative, matched {matched}", "oneOf")
        if "not" in schema and self._matches(instance, schema["not"], path):
            yield Issue(path, "matches a schema it must not match", "not")
        if "if" in schema:
            branch = "then" if self._matches(instance, schema["if"], path) else "else"
            if branch in schema:
                yield from self._descend(instance, schema[branch], path)

    def _matches(self, instance: Any, schema: Schema | bool, path: Path) -> bool:
        return next(self._descend(instance, schema, path), None) is None

    def _check_number(self, value: float, schema: Schema, path: Path) -> Iterator[Issue]:
        if "minimum" in schema and value < schema["minimum"]:
            yield Issue(path, f"{value} is less than the minimum {schema['minimum']}", "minimum")
        if "maximum" in schema and value > schema["maximum"]:
            yield Issue(path, f"{value} is greater than the maximum {schema['maximum']}", "maximum")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            yield Issue(path, f"{value} must be greater than {schema['exclusiveMinimum']}", "exclusiveMinimum")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            yield Issue(path, f"{value} must be less than {schema['exclusiveMaximum']}", "exclusiveMaximum")
        if "multipleOf" in schema:
            quotient = value / schema["multipleOf"]
            if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
                yield Issue(path, f"{value} is not a multiple of {schema['multipleOf']}", "multipleOf")

    def _check_string(self, value: str, schema: Schema, path: Path) -> Iterator[Issue]:
        if "minLength" in schema and len(value) < schema["minLength"]:
            yield Issue(path, f"must be at least {schema['minLength']} characters", "minLength")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            yield Issue(path, f"must be at most {schema['maxLength']} characters", "maxLength")
        if "pattern" in schema and not self._regex(schema["pattern"]).search(value):
            yield Issue(path, f"{value!r} does not match {schema['pattern']!r}", "pattern")
        if self.check_formats and "format" in schema and not FORMATS[schema["format"]](value):
            yield Issue(path, f"{value!r} is not a valid {schema['format']}", "format")

    def _check_array(self, items: list[Any], schema: Schema, path: Path) -> Iterator[Issue]:
        if "minItems" in schema and len(items) < schema["minItems"]:
            yield Issue(path, f"needs at least {schema['minItems']} items, has {len(items)}", "minItems")
        if "maxItems" in schema and len(items) > schema["maxItems"]:
            yield Issue(path, f"allows at most {schema['maxItems']} items, has {len(items)}", "maxItems")
        if schema.get("uniqueItems"):
            for later in range(1, len(items)):
                if any(json_equal(items[later], items[earlier]) for earlier in range(later)):
                    yield Issue(path + (later,), "duplicates an earlier item", "uniqueItems")
        prefix = schema.get("prefixItems", [])
        for index, (item, sub) in enumerate(zip(items, prefix)):
            yield from self._descend(item, sub, path + (index,))
        if "items" in schema:
            for index in range(len(prefix), len(items)):
                yield from self._descend(items[index], schema["items"], path + (index,))
        if "contains" in schema and not any(self._matches(item, schema["contains"], path) for item in items):
            yield Issue(path, "no item matches the 'contains' schema", "contains")

    def _check_object(self, obj: Mapping[str, Any], schema: Schema, path: Path) -> Iterator[Issue]:
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in obj:
                yield Issue(path + (name,), "is required", "required")
        for name, needed in schema.get("dependentRequired", {}).items():
            if name in obj:
                for other in needed:
                    if other not in obj:
                        yield Issue(path + (other,), f"is required when {name!r} is set", "dependentRequired")
        if "minProperties" in schema and len(obj) < schema["minProperties"]:
            yield Issue(path, f"needs at least {schema['minProperties']} properties", "minProperties")
        if "maxProperties" in schema and len(obj) > schema["maxProperties"]:
            yield Issue(path, f"allows at most {schema['maxProperties']} properties", "maxProperties")
        patterns = schema.get("patternProperties", {})
        additional = schema.get("additionalProperties", True)
        for key, value in obj.items():
            if not isinstance(key, str):
                yield Issue(path, f"property names must be strings, got {key!r}", "type")
                continue
            if "propertyNames" in schema:
                for issue in self._descend(key, schema["propertyNames"], path + (key,)):
                    yield Issue(issue.path, f"property name {issue.message}", "propertyNames")
            covered = False
            if key in properties:
                covered = True
                yield from self._descend(value, properties[key], path + (key,))
            for pattern, sub in patterns.items():
                if self._regex(pattern).search(key):
                    covered = True
                    yield from self._descend(value, sub, path + (key,))
            if not covered:
                if additional is False:
                    hint = _closest(key, properties)
                    suffix = f" (did you mean {hint!r}?)" if hint else ""
                    yield Issue(path + (key,), f"unknown property{suffix}", "additionalProperties")
                else:
                    yield from self._descend(value, additional, path + (key,))


def _closest(name: str, candidates: Mapping[str, Any]) -> str | None:
    """The known property a misspelt one most likely meant (edit distance <= 2)."""
    best, best_distance = None, 3
    for candidate in candidates:
        distance = _edit_distance(name.lower(), candidate.lower())
        if distance < best_distance:
            best, best_distance = candidate, distance
    return best


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


# --- defaults, environment overrides, loading ----------------------------------------------------


def apply_defaults(instance: Any, schema: Schema | bool, root: Schema | None = None) -> Any:
    """A copy of `instance` with `default` values filled in for missing object properties, recursively.

    Defaults are deep-copied so two configs never share a mutable default.
    """
    root = schema if root is None else root
    if not isinstance(schema, Mapping):
        return copy.deepcopy(instance)
    if "$ref" in schema:
        instance = apply_defaults(instance, resolve_pointer(root, schema["$ref"]), root)
    for sub in schema.get("allOf", []):
        instance = apply_defaults(instance, sub, root)
    if isinstance(instance, Mapping):
        result = {key: value for key, value in instance.items()}
        for name, sub in schema.get("properties", {}).items():
            if name not in result and isinstance(sub, Mapping) and "default" in sub:
                result[name] = copy.deepcopy(sub["default"])
            if name in result:
                result[name] = apply_defaults(result[name], sub, root)
        return result
    if isinstance(instance, list) and isinstance(schema.get("items"), Mapping):
        return [apply_defaults(item, schema["items"], root) for item in instance]
    return copy.deepcopy(instance)


def _schema_at(schema: Schema | bool, keys: list[str], root: Schema) -> Schema | bool | None:
    """The subschema describing the property at `keys`, following $ref; None when unknown."""
    node: Schema | bool | None = schema
    for key in keys:
        if not isinstance(node, Mapping):
            return None
        while "$ref" in node:
            node = resolve_pointer(root, node["$ref"])
        properties = node.get("properties", {})
        node = properties.get(key) if key in properties else node.get("additionalProperties")
        if node is None:
            return None
    while isinstance(node, Mapping) and "$ref" in node:
        node = resolve_pointer(root, node["$ref"])
    return node


def coerce_text(text: str, schema: Schema | bool | None) -> Any:
    """Turn an environment variable's text into the type its schema asks for (best effort)."""
    types = schema.get("type", []) if isinstance(schema, Mapping) else []
    types = [types] if isinstance(types, str) else list(types)
    lowered = text.strip().lower()
    if "boolean" in types and lowered in ("true", "false", "1", "0", "yes", "no", "on", "off"):
        return lowered in ("true", "1", "yes", "on")
    if "integer" in types and re.fullmatch(r"[+-]?\d+", lowered):
        return int(lowered)
    if "number" in types:
        try:
            return float(lowered)
        except ValueError:
            pass
    if "null" in types and lowered in ("", "null", "none"):
        return None
    if "array" in types:
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def env_overrides(environ: Mapping[str, str], prefix: str, schema: Schema) -> dict[str, Any]:
    """Nested overrides from variables like APP_DATABASE__PORT=5433 -> {'database': {'port': 5433}}."""
    overrides: dict[str, Any] = {}
    for name, text in sorted(environ.items()):
        if not name.startswith(prefix):
            continue
        keys = [part.lower() for part in name[len(prefix):].split("__") if part]
        if not keys:
            continue
        node = overrides
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                break
        else:
            node[keys[-1]] = coerce_text(text, _schema_at(schema, keys, schema))
    return overrides


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """`override` wins; nested mappings are merged key by key rather than replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_config(
    data: Mapping[str, Any],
    schema: Schema,
    *,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "APP_",
) -> dict[str, Any]:
    """Merge environment overrides into `data`, fill in defaults, validate, and return the result."""
    validator = Validator(schema)
    merged = deep_merge(data, env_overrides(environ or {}, env_prefix, schema))
    config = apply_defaults(merged, schema)
    validator.validate(config)
    return config


def validate(instance: Any, schema: Schema) -> list[Issue]:
    """Shortcut: every issue of `instance` against `schema`."""
    return Validator(schema).issues(instance)


# --- documentation -------------------------------------------------------------------------------

_CONSTRAINT_LABELS = {
    "minimum": ">= {}",
    "maximum": "<= {}",
    "exclusiveMinimum": "> {}",
    "exclusiveMaximum": "< {}",
    "multipleOf": "multiple of {}",
    "minLength": "at least {} chars",
    "maxLength": "at most {} chars",
    "pattern": "matches `{}`",
    "format": "{} format",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
}


def _type_label(schema: Schema) -> str:
    if "enum" in schema:
        return " \\| ".join(f"`{option!r}`" for option in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']!r}`"
    kind = schema.get("type")
    if kind is None:
        return "any"
    label = " or ".join(kind) if isinstance(kind, list) else kind
    if label == "array" and isinstance(schema.get("items"), Mapping) and "type" in schema["items"]:
        label = f"array of {_type_label(schema['items'])}"
    return label


def _constraints(schema: Schema) -> str:
    parts = [label.format(schema[key]) for key, label in _CONSTRAINT_LABELS.items() if key in schema]
    if schema.get("uniqueItems"):
        parts.append("unique items")
    if schema.get("deprecated"):
        parts.append("**deprecated**")
    return ", ".join(parts)


def iter_options(schema: Schema | bool, root: Schema | None = None, prefix: Path = (), required: bool = True):
    """Every documented option as (path, subschema, required), depth first, following $ref."""
    root = schema if root is None else root
    if not isinstance(schema, Mapping):
        return
    seen_refs: set[str] = set()
    while "$ref" in schema:
        if schema["$ref"] in seen_refs:
            return  # a recursive definition is documented once
        seen_refs.add(schema["$ref"])
        target = resolve_pointer(root, schema["$ref"])
        if not isinstance(target, Mapping):
            return
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    if prefix:
        yield prefix, schema, required
    names = set(schema.get("required", []))
    for name, sub in schema.get("properties", {}).items():
        yield from iter_options(sub, root, prefix + (name,), name in names)
    if isinstance(schema.get("items"), Mapping):
        yield from iter_options(schema["items"], root, prefix + ("[]",), True)


def describe_schema(schema: Schema) -> str:
    """A markdown reference table of every option: path, type, required, default, constraints, description."""
    check_schema(schema)
    rows = ["| option | type | required | default | constraints | description |", "|---|---|---|---|---|---|"]
    for path, sub, required in iter_options(schema):
        name = ".".join(str(p) for p in path).replace(".[]", "[]")
        default = f"`{sub['default']!r}`" if "default" in sub else ""
        description = " ".join(str(sub.get("description", sub.get("title", ""))).split())
        rows.append(
            f"| `{name}` | {_type_label(sub)} | {'yes' if required else 'no'} | {default} "
            f"| {_constraints(sub)} | {description} |"
        )
    return "\n".join(rows) + "\n"
