"""Tools for JSON documents held as plain Python values (dict, list, str, int, float, bool, None).

- JSON Pointer (RFC 6901): `resolve`, `set_pointer`, ... on paths like "/store/book/0/title"
- JSON Patch (RFC 6902): `apply_patch`, and `make_patch` to compute one from two documents
- JSON Merge Patch (RFC 7396): `merge_patch`, `make_merge_patch`
- JSONPath queries: `query(doc, "$.store.book[?(@.price < 10)].title")`, `update`, `delete`
- a JSON Schema subset: `validate(doc, schema)` for type/properties/items/enum/ranges/patterns/$ref
- helpers: `flatten`, `unflatten`, `deep_merge`, `json_equal`, `canonical_dumps`

Functions never modify their input documents unless the name says so (`*_in_place`); patches are applied
to a copy and either all operations succeed or the original is returned untouched.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence, Union

JSON = Union[dict, list, str, int, float, bool, None]

# -- errors -------------------------------------------------------------------------------------------


class JsonKitError(Exception):
    """Base class of every error raised here."""


class PointerError(JsonKitError):
    """A JSON Pointer is malformed or does not resolve in the document."""

    def __init__(self, message: str, pointer: str | None = None):
        self.pointer = pointer
        super().__init__(f"{message}" + (f" (pointer {pointer!r})" if pointer is not None else ""))


class PatchError(JsonKitError):
    """A patch operation is malformed or cannot be applied; `index` is the failing operation."""

    def __init__(self, message: str, index: int | None = None, operation: Mapping | None = None):
        self.index = index
        self.operation = operation
        where = f"operation {index}: " if index is not None else ""
        super().__init__(where + message)


class PatchTestFailed(PatchError):
    """A "test" operation found a different value."""


class PathSyntaxError(JsonKitError):
    """A JSONPath expression cannot be parsed; `position` is the offending character."""

    def __init__(self, message: str, expression: str, position: int):
        self.expression = expression
        self.position = position
        super().__init__(f"{message} at position {position} in {expression!r}")


class SchemaError(JsonKitError):
    """The schema itself is invalid (unknown type name, bad $ref)."""


# -- JSON equality ------------------------------------------------------------------------------------


def json_equal(a: JSON, b: JSON) -> bool:
    """Equality as JSON sees it: 1 == 1.0, but True != 1 and key order does not matter."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def json_type(value: JSON) -> str:
    """JSON type name: "object", "array", "string", "integer", "number", "boolean" or "null"."""
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
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


# -- JSON Pointer (RFC 6901) --------------------------------------------------------------------------


def escape_token(token: str) -> str:
    """Escape one reference token: "~" -> "~0", "/" -> "~1"."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape_token(token: str) -> str:
    if re.search(r"~(?![01])", token):
        raise PointerError(f"bad escape in token {token!r}")
    return token.replace("~1", "/").replace("~0", "~")


def parse_pointer(pointer: str) -> list[str]:
    """Reference tokens of a pointer; "" is the whole document, "/" is the key ""."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PointerError("a JSON Pointer must be empty or start with '/'", pointer)
    return [unescape_token(token) for token in pointer[1:].split("/")]


def make_pointer(tokens: Iterable[str | int]) -> str:
    """Inverse of parse_pointer."""
    return "".join("/" + escape_token(str(token)) for token in tokens)


def _array_index(token: str, length: int, pointer: str, *, allow_end: bool) -> int:
    """Index for `token` in an array of `length`; "-" (one past the end) only when adding."""
    if token == "-":
        if allow_end:
            return length
        raise PointerError("'-' refers to a nonexistent element", pointer)
    if not re.fullmatch(r"0|[1-9][0-9]*", token):
        raise PointerError(f"{token!r} is not an array index", pointer)
    index = int(token)
    limit = length if allow_end else length - 1
    if index > limit:
        raise PointerError(f"index {index} is out of range for an array of {length}", pointer)
    return index


def resolve(doc: JSON, pointer: str | Sequence[str]) -> JSON:
    """The value `pointer` refers to; PointerError if any step is missing."""
    tokens = parse_pointer(pointer) if isinstance(pointer, str) else list(pointer)
    text = pointer if isinstance(pointer, str) else make_pointer(tokens)
    current = doc
    for token in tokens:
        if isinstance(current, dict):
            if token not in current:
                raise PointerError(f"no member {token!r}", text)
            current = current[token]
        elif isinstance(current, list):
            current = current[_array_index(token, len(current), text, allow_end=False)]
        else:
            raise PointerError(f"cannot descend into a {json_type(current)}", text)
    return current


def exists(doc: JSON, pointer: str) -> bool:
    try:
        resolve(doc, pointer)
    except PointerError:
        return False
    return True


def resolve_or(doc: JSON, pointer: str, default: JSON = None) -> JSON:
    try:
        return resolve(doc, pointer)
    except PointerError:
        return default


def _parent(doc: JSON, pointer: str) -> tuple[JSON, str]:
    tokens = parse_pointer(pointer)
    if not tokens:
        raise PointerError("the document root has no parent", pointer)
    return resolve(doc, tokens[:-1]), tokens[-1]


def add_in_place(doc: JSON, pointer: str, value: JSON) -> JSON:
    """RFC 6902 "add": set an object member or insert into an array. Returns the (new) document."""
    if pointer == "":
        return value
    parent, token = _parent(doc, pointer)
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_array_index(token, len(parent), pointer, allow_end=True), value)
    else:
        raise PointerError(f"cannot add to a {json_type(parent)}", pointer)
    return doc


def remove_in_place(doc: JSON, pointer: str) -> JSON:
    """RFC 6902 "remove": delete an object member or array element. Returns the removed value."""
    parent, token = _parent(doc, pointer)
    if isinstance(parent, dict):
        if token not in parent:
            raise PointerError(f"no member {token!r} to remove", pointer)
        return parent.pop(token)
    if isinstance(parent, list):
        return parent.pop(_array_index(token, len(parent), pointer, allow_end=False))
    raise PointerError(f"cannot remove from a {json_type(parent)}", pointer)


def replace_in_place(doc: JSON, pointer: str, value: JSON) -> JSON:
    """RFC 6902 "replace": the target must exist. Returns the (new) document."""
    if pointer == "":
        return value
    parent, token = _parent(doc, pointer)
    if isinstance(parent, dict):
        if token not in parent:
            raise PointerError(f"no member {token!r} to replace", pointer)
        parent[token] = value
    elif isinstance(parent, list):
        parent[_array_index(token, len(parent), pointer, allow_end=False)] = value
    else:
        raise PointerError(f"cannot replace inside a {json_type(parent)}", pointer)
    return doc


def set_pointer(doc: JSON, pointer: str, value: JSON, *, create: bool = True) -> JSON:
    """A copy of `doc` with `value` at `pointer`, creating missing objects on the way when `create`.

    Unlike "add", an existing array element is replaced rather than shifted.
    """
    result = copy.deepcopy(doc)
    tokens = parse_pointer(pointer)
    if not tokens:
        return copy.deepcopy(value)
    current = result
    for depth, token in enumerate(tokens[:-1]):
        prefix = make_pointer(tokens[: depth + 1])
        if isinstance(current, dict):
            if token not in current:
                if not create:
                    raise PointerError(f"no member {token!r}", prefix)
                current[token] = {}
            current = current[token]
        elif isinstance(current, list):
            current = current[_array_index(token, len(current), prefix, allow_end=False)]
        else:
            raise PointerError(f"cannot descend into a {json_type(current)}", prefix)
    last = tokens[-1]
    if isinstance(current, dict):
        current[last] = copy.deepcopy(value)
    elif isinstance(current, list):
        index = _array_index(last, len(current), pointer, allow_end=True)
        if index == len(current):
            current.append(copy.deepcopy(value))
        else:
            current[index] = copy.deepcopy(value)
    else:
        raise PointerError(f"cannot set inside a {json_type(current)}", pointer)
    return result


def is_prefix(prefix: str, pointer: str) -> bool:
    """True when `pointer` is `prefix` or lies inside it ("/a" is a prefix of "/a/b", not of "/ab")."""
    a, b = parse_pointer(prefix), parse_pointer(pointer)
    return b[: len(a)] == a


def iter_pointers(doc: JSON, prefix: str = "") -> Iterator[tuple[str, JSON]]:
    """Every (pointer, value) pair in the document, parents before children."""
    yield prefix, doc
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from iter_pointers(value, prefix + "/" + escape_token(key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from iter_pointers(value, f"{prefix}/{index}")


# -- JSON Patch (RFC 6902) ----------------------------------------------------------------------------

_REQUIRED_MEMBERS = {
    "add": ("path", "value"),
    "remove": ("path",),
    "replace": ("path", "value"),
    "move": ("from", "path"),
    "copy": ("from", "path"),
    "test": ("path", "value"),
}


def validate_patch(patch: Any) -> list[dict]:
    """Check the shape of a patch document and return it as a list of operation dicts."""
    if not isinstance(patch, list):
        raise PatchError("a JSON Patch must be an array of operations")
    for index, operation in enumerate(patch):
        if not isinstance(operation, dict):
            raise PatchError("each operation must be an object", index, operation)
        op = operation.get("op")
        if op not in _REQUIRED_MEMBERS:
            raise PatchError(f"unknown op {op!r}", index, operation)
        for member in _REQUIRED_MEMBERS[op]:
            if member not in operation:
                raise PatchError(f"{op!r} needs a {member!r} member", index, operation)
        for member in ("path", "from"):
            if member in operation:
                if not isinstance(operation[member], str):
                    raise PatchError(f"{member!r} must be a string", index, operation)
                try:
                    parse_pointer(operation[member])
                except PointerError as exc:
                    raise PatchError(str(exc), index, operation) from None
    return patch


def _apply_operation(doc: JSON, operation: Mapping[str, Any]) -> JSON:
    op = operation["op"]
    path = operation["path"]
    if op == "add":
        return add_in_place(doc, path, copy.deepcopy(operation["value"]))
    if op == "remove":
        if path == "":
            raise PointerError("cannot remove the whole document", path)
        remove_in_place(doc, path)
        return doc
    if op == "replace":
        return replace_in_place(doc, path, copy.deepcopy(operation["value"]))
    if op == "move":
        source = operation["from"]
        if source == path:
            return doc
        if is_prefix(source, path):
            raise PointerError("cannot move a value into one of its own children", path)
        value = remove_in_place(doc, source)
        return add_in_place(doc, path, value)
    if op == "copy":
        value = copy.deepcopy(resolve(doc, operation["from"]))
        return add_in_place(doc, path, value)
    if op == "test":
        actual = resolve(doc, path)
        if not json_equal(actual, operation["value"]):
            raise PatchTestFailed(f"test at {path!r} failed: expected {operation['value']!r}, found {actual!r}")
        return doc
    raise PatchError(f"unknown op {op!r}")


def apply_patch(doc: JSON, patch: Sequence[Mapping[str, Any]]) -> JSON:
    """A patched copy of `doc`. If any operation fails, PatchError names it and `doc` is unchanged."""
    operations = validate_patch(list(patch))
    result = copy.deepcopy(doc)
    for index, operation in enumerate(operations):
        try:
            result = _apply_operation(result, operation)
        except PatchTestFailed as exc:
            raise PatchTestFailed(str(exc), index, operation) from None
        except PointerError as exc:
            raise PatchError(str(exc), index, operation) from None
    return result


def patch_paths(patch: Sequence[Mapping[str, Any]]) -> set[str]:
    """Every pointer a patch writes to (paths, plus "from" of moves), e.g. for permission checks."""
    touched = set()
    for operation in validate_patch(list(patch)):
        if operation["op"] != "test":
            touched.add(operation["path"])
        if operation["op"] == "move":
            touched.add(operation["from"])
    return touched


# -- computing patches --------------------------------------------------------------------------------


def _lcs_table(a: Sequence[JSON], b: Sequence[JSON]) -> list[list[int]]:
    rows, cols = len(a), len(b)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(rows - 1, -1, -1):
        for j in range(cols - 1, -1, -1):
            if json_equal(a[i], b[j]):
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    return table


def _diff_arrays(a: list, b: list, prefix: str, ops: list[dict]) -> None:
    """Array edits from the longest common subsequence; pairs of remove+add at one spot become replace."""
    table = _lcs_table(a, b)
    i = j = 0
    index = 0  # position in the array as it is while the patch is applied
    while i < len(a) or j < len(b):
        if i < len(a) and j < len(b) and json_equal(a[i], b[j]):
            i += 1
            j += 1
            index += 1
        elif i < len(a) and j < len(b) and table[i + 1][j] == table[i][j + 1] == table[i + 1][j + 1]:
            # Neither side is kept: change the element in place (recursing for nested structures).
            _diff(a[i], b[j], f"{prefix}/{index}", ops)
            i += 1
            j += 1
            index += 1
        elif j < len(b) and (i == len(a) or table[i][j + 1] >= table[i + 1][j]):
            ops.append({"op": "add", "path": f"{prefix}/{index}", "value": copy.deepcopy(b[j])})
            j += 1
            index += 1
        else:
            ops.append({"op": "remove", "path": f"{prefix}/{index}"})
            i += 1


def _diff(a: JSON, b: JSON, prefix: str, ops: list[dict]) -> None:
    if json_equal(a, b):
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key not in b:
                ops.append({"op": "remove", "path": prefix + "/" + escape_token(key)})
        for key, value in b.items():
            path = prefix + "/" + escape_token(key)
            if key not in a:
                ops.append({"op": "add", "path": path, "value": copy.deepcopy(value)})
            else:
                _diff(a[key], value, path, ops)
        return
    if isinstance(a, list) and isinstance(b, list):
        _diff_arrays(a, b, prefix, ops)
        return
    ops.append({"op": "replace", "path": prefix, "value": copy.deepcopy(b)})


def make_patch(source: JSON, target: JSON) -> list[dict]:
    """A JSON Patch turning `source` into `target`: apply_patch(source, make_patch(source, target)) == target."""
    ops: list[dict] = []
    _diff(source, target, "", ops)
    return ops


def invert_patch(doc: JSON, patch: Sequence[Mapping[str, Any]]) -> list[dict]:
    """A patch that undoes `patch` when applied to its result (computed against the original `doc`)."""
    return make_patch(apply_patch(doc, patch), doc)


# -- JSON Merge Patch (RFC 7396) ----------------------------------------------------------------------


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """Apply a merge patch: objects merge recursively, null deletes a member, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def make_merge_patch(source: JSON, target: JSON) -> JSON:
    """A merge patch turning `source` into `target`.

    Merge patches cannot express explicit nulls in the target; a ValueError is raised for those.
    """
    if not isinstance(source, dict) or not isinstance(target, dict):
        if _contains_null(target):
            raise ValueError("a merge patch cannot set a value to null")
        return copy.deepcopy(target)
    patch: dict[str, JSON] = {}
    for key in source:
        if key not in target:
            patch[key] = None
    for key, value in target.items():
        if key not in source:
            if _contains_null(value):
                raise ValueError(f"a merge patch cannot set {key!r} to a value containing null")
            patch[key] = copy.deepcopy(value)
        elif not json_equal(source[key], value):
            patch[key] = make_merge_patch(source[key], value)
    return patch


def _contains_null(value: JSON) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_contains_null(v) for v in value.values())
    return False


# -- JSONPath: tokens ---------------------------------------------------------------------------------
#
# Supported syntax (a practical subset of RFC 9535):
#   $ / @                 root / current node
#   .name  ['name']       member            .*  [*]        all children
#   [0]  [-1]             array element     [1:5:2]        slice (Python semantics)
#   ..name  ..[0]  ..*    descendants       [0, 'a']       unions of selectors
#   [?(@.price < 10 && @.tags)]             filters; the parentheses are optional
#   filter operands: literals ("a", 'a', 12, 1.5, true, false, null), relative (@...) and absolute ($...)
#   singular queries, and functions length(), count(), match(), search(), value()


@dataclass(frozen=True)
class PathToken:
    kind: str  # "root", "current", "dot", "dotdot", "lbracket", "rbracket", "star", "comma", "colon",
    #            "question", "lparen", "rparen", "name", "string", "number", "op", "not", "end"
    text: str
    position: int
    value: Any = None


_PATH_PUNCTUATION = [
    ("..", "dotdot"), (".", "dot"), ("[", "lbracket"), ("]", "rbracket"), ("*", "star"), (",", "comma"),
    (":", "colon"), ("?", "question"), ("(", "lparen"), (")", "rparen"), ("$", "root"), ("@", "current"),
]
_PATH_OPERATORS = ["==", "!=", "<=", ">=", "&&", "||", "=~", "<", ">"]
_PATH_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_PATH_NAME = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff-]*")


def _read_string(expression: str, start: int) -> tuple[str, int]:
    """Read a quoted string starting at `start` (the quote); returns (value, index after the string)."""
    quote = expression[start]
    index = start + 1
    chars = []
    escapes = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "/": "/", "\\": "\\", "'": "'", '"': '"'}
    while index < len(expression):
        char = expression[index]
        if char == "\\":
            if index + 1 >= len(expression):
                break
            nxt = expression[index + 1]
            if nxt == "u":
                hex_digits = expression[index + 2:index + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", hex_digits):
                    raise PathSyntaxError("bad \\u escape", expression, index)
                chars.append(chr(int(hex_digits, 16)))
                index += 6
                continue
            if nxt not in escapes:
                raise PathSyntaxError(f"bad escape \\{nxt}", expression, index)
            chars.append(escapes[nxt])
            index += 2
            continue
        if char == quote:
            return "".join(chars), index + 1
        chars.append(char)
        index += 1
    raise PathSyntaxError("unterminated string", expression, start)


def tokenize_path(expression: str) -> list[PathToken]:
    tokens: list[PathToken] = []
    index = 0
    while index < len(expression):
        char = expression[index]
        if char.isspace():
            index += 1
            continue
        if char in "'\"":
            value, end = _read_string(expression, index)
            tokens.append(PathToken("string", expression[index:end], index, value))
            index = end
            continue
        if char.isdigit() or (char == "-" and index + 1 < len(expression) and expression[index + 1].isdigit()):
            match = _PATH_NUMBER.match(expression, index)
            text = match.group(0)
            value = float(text) if any(c in text for c in ".eE") else int(text)
            tokens.append(PathToken("number", text, index, value))
            index = match.end()
            continue
        operator = next((op for op in _PATH_OPERATORS if expression.startswith(op, index)), None)
        if operator is not None:
            tokens.append(PathToken("op", operator, index))
            index += len(operator)
            continue
        if char == "!":
            tokens.append(PathToken("not", "!", index))
            index += 1
            continue
        punctuation = next(((text, kind) for text, kind in _PATH_PUNCTUATION if expression.startswith(text, index)),
                           None)
        if punctuation is not None:
            text, kind = punctuation
            tokens.append(PathToken(kind, text, index))
            index += len(text)
            continue
        match = _PATH_NAME.match(expression, index)
        if match:
            tokens.append(PathToken("name", match.group(0), index, match.group(0)))
            index = match.end()
            continue
        raise PathSyntaxError(f"unexpected character {char!r}", expression, index)
    tokens.append(PathToken("end", "", len(expression)))
    return tokens


# -- JSONPath: syntax tree ----------------------------------------------------------------------------


@dataclass(frozen=True)
class NameSelector:
    name: str


@dataclass(frozen=True)
class IndexSelector:
    index: int


@dataclass(frozen=True)
class SliceSelector:
    start: int | None
    stop: int | None
    step: int | None


@dataclass(frozen=True)
class WildcardSelector:
    pass


@dataclass(frozen=True)
class FilterSelector:
    expression: FilterExpr


Selector = Union[NameSelector, IndexSelector, SliceSelector, WildcardSelector, FilterSelector]


@dataclass(frozen=True)
class Segment:
    selectors: tuple[Selector, ...]
    descendant: bool = False


@dataclass(frozen=True)
class PathQuery:
    absolute: bool  # "$" (True) or "@" (False)
    segments: tuple[Segment, ...]

    @property
    def is_singular(self) -> bool:
        """A query that can select at most one node: only names and indexes, no descendants."""
        return all(
            not seg.descendant and len(seg.selectors) == 1
            and isinstance(seg.selectors[0], (NameSelector, IndexSelector))
            for seg in self.segments
        )


@dataclass(frozen=True)
class Literal:
    value: JSON


@dataclass(frozen=True)
class QueryOperand:
    query: PathQuery


@dataclass(frozen=True)
class FunctionCall:
    name: str
    args: tuple[FilterExpr, ...]


@dataclass(frozen=True)
class Comparison:
    op: str
    left: FilterExpr
    right: FilterExpr


@dataclass(frozen=True)
class Logical:
    op: str  # "&&" or "||"
    left: FilterExpr
    right: FilterExpr


@dataclass(frozen=True)
class Negation:
    operand: FilterExpr


FilterExpr = Union[Literal, QueryOperand, FunctionCall, Comparison, Logical, Negation]


# -- JSONPath: parser ---------------------------------------------------------------------------------

_FUNCTION_ARITY = {"length": 1, "count": 1, "match": 2, "search": 2, "value": 1}


class PathParser:
    def __init__(self, expression: str):
        self.expression = expression
        self.tokens = tokenize_path(expression)
        self.index = 0

    @property
    def current(self) -> PathToken:
        return self.tokens[self.index]

    def _advance(self) -> PathToken:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def _expect(self, kind: str, what: str) -> PathToken:
        if self.current.kind != kind:
            found = self.current.text or "end of expression"
            raise PathSyntaxError(f"expected {what}, found {found!r}", self.expression, self.current.position)
        return self._advance()

    def _error(self, message: str) -> PathSyntaxError:
        return PathSyntaxError(message, self.expression, self.current.position)

    def parse(self) -> PathQuery:
        if self.current.kind != "root":
            raise self._error("a JSONPath must start with '$'")
        query = self._query()
        if self.current.kind != "end":
            raise self._error(f"unexpected {self.current.text!r}")
        return query

    def _query(self) -> PathQuery:
        anchor = self._advance()
        segments = []
        while True:
            kind = self.current.kind
            if kind == "dot":
                self._advance()
                segments.append(Segment((self._dot_member(),)))
            elif kind == "dotdot":
                self._advance()
                if self.current.kind == "lbracket":
                    segments.append(Segment(self._bracket(), descendant=True))
                else:
                    segments.append(Segment((self._dot_member(),), descendant=True))
            elif kind == "lbracket":
                segments.append(Segment(self._bracket()))
            else:
                break
        return PathQuery(absolute=anchor.kind == "root", segments=tuple(segments))

    def _dot_member(self) -> Selector:
        token = self.current
        if token.kind == "star":
            self._advance()
            return WildcardSelector()
        if token.kind == "name":
            self._advance()
            return NameSelector(token.value)
        raise self._error("expected a member name or '*' after '.'")

    def _bracket(self) -> tuple[Selector, ...]:
        self._expect("lbracket", "'['")
        selectors = [self._selector()]
        while self.current.kind == "comma":
            self._advance()
            selectors.append(self._selector())
        self._expect("rbracket", "']'")
        return tuple(selectors)

    def _selector(self) -> Selector:
        token = self.current
        if token.kind == "string":
            self._advance()
            return NameSelector(token.value)
        if token.kind == "star":
            self._advance()
            return WildcardSelector()
        if token.kind == "question":
            self._advance()
            return FilterSelector(self._or())
        if token.kind in ("number", "colon"):
            return self._index_or_slice()
        raise self._error("expected a name, index, slice, '*' or filter")

    def _integer(self) -> int:
        token = self._expect("number", "an integer")
        if not isinstance(token.value, int):
            raise PathSyntaxError("array indexes must be integers", self.expression, token.position)
        return token.value

    def _index_or_slice(self) -> Selector:
        start = self._integer() if self.current.kind == "number" else None
        if self.current.kind != "colon":
            if start is None:
                raise self._error("expected an index")
            return IndexSelector(start)
        self._advance()
        stop = self._integer() if self.current.kind == "number" else None
        step = None
        if self.current.kind == "colon":
            self._advance()
            step = self._integer() if self.current.kind == "number" else None
        return SliceSelector(start, stop, step)

    # filter expressions

    def _or(self) -> FilterExpr:
        node = self._and()
        while self.current.kind == "op" and self.current.text == "||":
            self._advance()
            node = Logical("||", node, self._and())
        return node

    def _and(self) -> FilterExpr:
        node = self._not()
        while self.current.kind == "op" and self.current.text == "&&":
            self._advance()
            node = Logical("&&", node, self._not())
        return node

    def _not(self) -> FilterExpr:
        if self.current.kind == "not":
            self._advance()
            return Negation(self._not())
        return self._comparison()

    def _comparison(self) -> FilterExpr:
        left = self._operand()
        if self.current.kind == "op" and self.current.text in ("==", "!=", "<", "<=", ">", ">=", "=~"):
            op = self._advance().text
            right = self._operand()
            for side in (left, right):
                if isinstance(side, QueryOperand) and not side.query.is_singular:
                    raise self._error("only singular queries (names and indexes) can be compared")
            if op == "=~":
                return FunctionCall("match", (left, right))
            return Comparison(op, left, right)
        return left

    def _operand(self) -> FilterExpr:
        token = self.current
        if token.kind == "lparen":
            self._advance()
            inner = self._or()
            self._expect("rparen", "')'")
            return inner
        if token.kind in ("root", "current"):
            return QueryOperand(self._query())
        if token.kind in ("string", "number"):
            self._advance()
            return Literal(token.value)
        if token.kind == "name":
            if token.value in ("true", "false", "null"):
                self._advance()
                return Literal({"true": True, "false": False, "null": None}[token.value])
            return self._function()
        raise self._error("expected a value, a query or a function in the filter")

    def _function(self) -> FunctionCall:
        name = self._advance()
        if name.value not in _FUNCTION_ARITY:
            raise PathSyntaxError(f"unknown function {name.value!r}", self.expression, name.position)
        self._expect("lparen", "'(' after the function name")
        args = []
        if self.current.kind != "rparen":
            args.append(self._or())
            while self.current.kind == "comma":
                self._advance()
                args.append(self._or())
        self._expect("rparen", "')'")
        if len(args) != _FUNCTION_ARITY[name.value]:
            raise PathSyntaxError(f"{name.value}() takes {_FUNCTION_ARITY[name.value]} argument(s)",
                                  self.expression, name.position)
        return FunctionCall(name.value, tuple(args))


# -- JSONPath: evaluation -----------------------------------------------------------------------------

Location = tuple[Union[str, int], ...]


class _Nothing:
    """The result of a query operand that selects no node; distinct from JSON null."""

    def __repr__(self) -> str:
        return "Nothing"


NOTHING = _Nothing()


@dataclass(frozen=True)
class Match:
    """One node selected by a query: its value and where it is."""

    value: JSON
    location: Location

    @property
    def pointer(self) -> str:
        return make_pointer(self.location)

    @property
    def path(self) -> str:
        """Normalized JSONPath of the node: $['store']['book'][0]."""
        parts = []
        for step in self.location:
            if isinstance(step, int):
                parts.append(f"[{step}]")
            else:
                escaped = step.replace("\\", "\\\\").replace("'", "\\'")
                parts.append(f"['{escaped}']")
        return "$" + "".join(parts)


def _children(value: JSON) -> Iterator[tuple[str | int, JSON]]:
    if isinstance(value, dict):
        yield from value.items()
    elif isinstance(value, list):
        yield from enumerate(value)


def _descendants(location: Location, value: JSON) -> Iterator[tuple[Location, JSON]]:
    """The node and everything below it, parents first."""
    yield location, value
    for key, child in _children(value):
        yield from _descendants(location + (key,), child)


def _slice_indexes(length: int, selector: SliceSelector) -> range:
    step = 1 if selector.step is None else selector.step
    if step == 0:
        return range(0)
    return range(length)[slice(selector.start, selector.stop, step)]


def _select(selector: Selector, location: Location, value: JSON, root: JSON) -> Iterator[tuple[Location, JSON]]:
    if isinstance(selector, NameSelector):
        if isinstance(value, dict) and selector.name in value:
            yield location + (selector.name,), value[selector.name]
    elif isinstance(selector, IndexSelector):
        if isinstance(value, list):
            index = selector.index + len(value) if selector.index < 0 else selector.index
            if 0 <= index < len(value):
                yield location + (index,), value[index]
    elif isinstance(selector, SliceSelector):
        if isinstance(value, list):
            for index in _slice_indexes(len(value), selector):
                yield location + (index,), value[index]
    elif isinstance(selector, WildcardSelector):
        for key, child in _children(value):
            yield location + (key,), child
    elif isinstance(selector, FilterSelector):
        for key, child in _children(value):
            if _truthy(_evaluate_filter(selector.expression, child, value)):
                yield location + (key,), child
    else:
        raise TypeError(f"unknown selector {selector!r}")


def _run_segments(segments: Sequence[Segment], nodes: list[tuple[Location, JSON]], root: JSON) -> list[tuple[Location, JSON]]:
    for segment in segments:
        selected: list[tuple[Location, JSON]] = []
        for location, value in nodes:
            visit = _descendants(location, value) if segment.descendant else [(location, value)]
            for loc, node in visit:
                for selector in segment.selectors:
                    selected.extend(_select(selector, loc, node, root))
        nodes = selected
    return nodes


def _run_query(query: PathQuery, current: JSON, root: JSON) -> list[tuple[Location, JSON]]:
    start = root if query.absolute else current
    return _run_segments(query.segments, [((), start)], root)


def _operand_value(expression: FilterExpr, current: JSON, root: JSON) -> Any:
    """Value of a comparison operand: a JSON value, or NOTHING when a query selects no single node."""
    if isinstance(expression, Literal):
        return expression.value
    if isinstance(expression, QueryOperand):
        nodes = _run_query(expression.query, current, root)
        return nodes[0][1] if len(nodes) == 1 else NOTHING
    if isinstance(expression, FunctionCall):
        return _call_function(expression, current, root)
    # A nested logical expression used as an operand is a boolean.
    return _truthy(_evaluate_filter(expression, current, root))


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "==":
        if left is NOTHING or right is NOTHING:
            return left is right
        return json_equal(left, right)
    if op == "!=":
        return not _compare("==", left, right)
    if op in ("<=", ">="):
        return _compare(op[0], left, right) or _compare("==", left, right)
    # "<" and ">": only numbers with numbers and strings with strings are ordered.
    both_numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (left, right))
    both_strings = isinstance(left, str) and isinstance(right, str)
    if not (both_numbers or both_strings):
        return False
    return left < right if op == "<" else left > right


def _truthy(result: Any) -> bool:
    if isinstance(result, bool):
        return result
    if isinstance(result, list):  # a nodelist from an existence test
        return bool(result)
    return result is not NOTHING and result is not None and result is not False


def _evaluate_filter(expression: FilterExpr, current: JSON, root: JSON) -> Any:
    if isinstance(expression, Logical):
        left = _truthy(_evaluate_filter(expression.left, current, root))
        if expression.op == "&&":
            return left and _truthy(_evaluate_filter(expression.right, current, root))
        return left or _truthy(_evaluate_filter(expression.right, current, root))
    if isinstance(expression, Negation):
        return not _truthy(_evaluate_filter(expression.operand, current, root))
    if isinstance(expression, Comparison):
        return _compare(expression.op, _operand_value(expression.left, current, root),
                        _operand_value(expression.right, current, root))
    if isinstance(expression, QueryOperand):
        # Existence test: true when the query selects at least one node (even a null).
        return _run_query(expression.query, current, root)
    if isinstance(expression, FunctionCall):
        return _call_function(expression, current, root)
    if isinstance(expression, Literal):
        return expression.value
    raise TypeError(f"unknown filter expression {expression!r}")


def _regex_argument(expression: FilterExpr, current: JSON, root: JSON) -> re.Pattern | None:
    pattern = _operand_value(expression, current, root)
    if not isinstance(pattern, str):
        return None
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _call_function(call: FunctionCall, current: JSON, root: JSON) -> Any:
    name = call.name
    if name == "length":
        value = _operand_value(call.args[0], current, root)
        if isinstance(value, (str, list, dict)):
            return len(value)
        return NOTHING
    if name == "count":
        arg = call.args[0]
        if not isinstance(arg, QueryOperand):
            raise JsonKitError("count() needs a query argument")
        return len(_run_query(arg.query, current, root))
    if name == "value":
        arg = call.args[0]
        if not isinstance(arg, QueryOperand):
            raise JsonKitError("value() needs a query argument")
        nodes = _run_query(arg.query, current, root)
        return nodes[0][1] if len(nodes) == 1 else NOTHING
    if name in ("match", "search"):
        text = _operand_value(call.args[0], current, root)
        pattern = _regex_argument(call.args[1], current, root)
        if not isinstance(text, str) or pattern is None:
            return False
        return bool(pattern.fullmatch(text) if name == "match" else pattern.search(text))
    raise JsonKitError(f"unknown function {name!r}")


# -- JSONPath: public API -----------------------------------------------------------------------------


class JSONPath:
    """A compiled JSONPath expression.

        titles = JSONPath("$.store.book[?(@.price < $.limits.cheap)].title")
        titles.values(doc)
    """

    _cache: dict[str, PathQuery] = {}

    def __init__(self, expression: str):
        self.expression = expression
        query = self._cache.get(expression)
        if query is None:
            query = PathParser(expression).parse()
            if len(self._cache) < 512:
                self._cache[expression] = query
        self.query = query

    def __repr__(self) -> str:
        return f"JSONPath({self.expression!r})"

    def find(self, doc: JSON) -> list[Match]:
        """Every selected node, in document order (duplicates possible with unions)."""
        return [Match(value, location) for location, value in _run_query(self.query, doc, doc)]

    def values(self, doc: JSON) -> list[JSON]:
        return [match.value for match in self.find(doc)]

    def first(self, doc: JSON, default: JSON = None) -> JSON:
        matches = self.find(doc)
        return matches[0].value if matches else default

    def pointers(self, doc: JSON) -> list[str]:
        return [match.pointer for match in self.find(doc)]

    def exists(self, doc: JSON) -> bool:
        return bool(self.find(doc))

    def update(self, doc: JSON, value_or_function: JSON | Callable[[JSON], JSON]) -> JSON:
        """A copy of `doc` where every selected node is replaced by a value or by function(old value)."""
        result = copy.deepcopy(doc)
        for match in self.find(doc):
            new = value_or_function(match.value) if callable(value_or_function) else value_or_function
            if not match.location:
                return copy.deepcopy(new)
            parent = resolve(result, [str(step) for step in match.location[:-1]])
            parent[match.location[-1]] = copy.deepcopy(new)
        return result

    def delete(self, doc: JSON) -> JSON:
        """A copy of `doc` without the selected nodes (array elements are removed back to front)."""
        result = copy.deepcopy(doc)
        matches = self.find(doc)
        if any(not m.location for m in matches):
            raise JsonKitError("cannot delete the document root")
        # Remove deeper and later nodes first so earlier locations stay valid.
        for match in sorted(matches, key=lambda m: (len(m.location), m.location[-1] if isinstance(m.location[-1], int) else -1),
                            reverse=True):
            try:
                parent = resolve(result, [str(step) for step in match.location[:-1]])
            except PointerError:
                continue  # an ancestor was already deleted
            key = match.location[-1]
            if isinstance(parent, dict):
                parent.pop(key, None)
            elif isinstance(parent, list) and isinstance(key, int) and key < len(parent):
                del parent[key]
        return result


def query(doc: JSON, expression: str) -> list[JSON]:
    """Values selected by a JSONPath expression."""
    return JSONPath(expression).values(doc)


def query_one(doc: JSON, expression: str, default: JSON = None) -> JSON:
    """The first selected value, or `default`."""
    return JSONPath(expression).first(doc, default)


def query_paths(doc: JSON, expression: str) -> list[str]:
    """Normalized paths of the selected nodes."""
    return [match.path for match in JSONPath(expression).find(doc)]


def update(doc: JSON, expression: str, value_or_function: JSON | Callable[[JSON], JSON]) -> JSON:
    return JSONPath(expression).update(doc, value_or_function)


def delete(doc: JSON, expression: str) -> JSON:
    return JSONPath(expression).delete(doc)


# -- JSON Schema subset -------------------------------------------------------------------------------

_FORMATS: dict[str, re.Pattern] = {
    "email": re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$"),
    "date": re.compile(r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$"),
    "date-time": re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"),
    "time": re.compile(r"^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$"),
    "uri": re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$"),
    "uuid": re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"),
    "ipv4": re.compile(r"^((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$"),
    "hostname": re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"),
}
_TYPE_NAMES = ("object", "array", "string", "integer", "number", "boolean", "null")


@dataclass(frozen=True)
class ValidationIssue:
    """One way a document fails its schema: where (a JSON Pointer), which keyword, and why."""

    pointer: str
    keyword: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"


class ValidationFailed(JsonKitError):
    def __init__(self, issues: list[ValidationIssue]):
        self.issues = issues
        lines = "\n".join(f"  {issue}" for issue in issues[:10])
        more = f"\n  ... and {len(issues) - 10} more" if len(issues) > 10 else ""
        super().__init__(f"{len(issues)} validation error(s):\n{lines}{more}")


def _matches_type(value: JSON, expected: str) -> bool:
    actual = json_type(value)
    if expected == "number":
        return actual in ("integer", "number")
    return actual == expected


class SchemaValidator:
    """Validate documents against a JSON Schema (draft 2020-12 keywords, commonly used subset).

    Supported: type, enum, const, properties, required, additionalProperties, patternProperties,
    propertyNames, minProperties, maxProperties, dependentRequired, items, prefixItems, contains,
    minItems, maxItems, uniqueItems, minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf,
    minLength, maxLength, pattern, format, allOf, anyOf, oneOf, not, if/then/else and local $ref.
    """

    def __init__(self, schema: JSON, *, check_formats: bool = True):
        if not isinstance(schema, (dict, bool)):
            raise SchemaError("a schema must be an object or a boolean")
        self.schema = schema
        self.check_formats = check_formats
        self._check_schema(schema, "")

    def _check_schema(self, schema: JSON, pointer: str) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            raise SchemaError(f"schema at {pointer or '/'} must be an object or a boolean")
        types = schema.get("type")
        for name in types if isinstance(types, list) else ([types] if types is not None else []):
            if name not in _TYPE_NAMES:
                raise SchemaError(f"unknown type {name!r} at {pointer or '/'}")
        for key in ("properties", "patternProperties", "$defs", "definitions"):
            for name, sub in (schema.get(key) or {}).items():
                self._check_schema(sub, f"{pointer}/{key}/{escape_token(name)}")
        for key in ("allOf", "anyOf", "oneOf", "prefixItems"):
            for index, sub in enumerate(schema.get(key) or []):
                self._check_schema(sub, f"{pointer}/{key}/{index}")
        for key in ("items", "not", "if", "then", "else", "contains", "additionalProperties", "propertyNames"):
            if key in schema:
                self._check_schema(schema[key], f"{pointer}/{key}")
        if "pattern" in schema:
            try:
                re.compile(schema["pattern"])
            except re.error as exc:
                raise SchemaError(f"bad pattern at {pointer or '/'}: {exc}") from None

    def _resolve_ref(self, ref: str) -> JSON:
        if not ref.startswith("#"):
            raise SchemaError(f"only local references are supported, got {ref!r}")
        try:
            return resolve(self.schema, ref[1:])
        except PointerError as exc:
            raise SchemaError(f"unresolvable $ref {ref!r}: {exc}") from None

    def iter_errors(self, doc: JSON) -> Iterator[ValidationIssue]:
        yield from self._validate(doc, self.schema, "", depth=0)

    def errors(self, doc: JSON) -> list[ValidationIssue]:
        return list(self.iter_errors(doc))

    def is_valid(self, doc: JSON) -> bool:
        return next(self.iter_errors(doc), None) is None

    def validate(self, doc: JSON) -> None:
        issues = self.errors(doc)
        if issues:
            raise ValidationFailed(issues)

    def _validate(self, value: JSON, schema: JSON, pointer: str, depth: int) -> Iterator[ValidationIssue]:
        if depth > 100:
            raise SchemaError("schema recursion is too deep (a $ref cycle?)")
        if schema is True:
            return
        if schema is False:
            yield ValidationIssue(pointer, "false", "no value is allowed here")
            return
        if "$ref" in schema:
            yield from self._validate(value, self._resolve_ref(schema["$ref"]), pointer, depth + 1)
        yield from self._generic(value, schema, pointer)
        kind = json_type(value)
        if kind == "object":
            yield from self._object(value, schema, pointer, depth)
        elif kind == "array":
            yield from self._array(value, schema, pointer, depth)
        elif kind == "string":
            yield from self._string(value, schema, pointer)
        if kind in ("integer", "number"):
            yield from self._number(value, schema, pointer)
        yield from self._combinators(value, schema, pointer, depth)

    def _generic(self, value: JSON, schema: dict, pointer: str) -> Iterator[ValidationIssue]:
        if "type" in schema:
            expected = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_matches_type(value, t) for t in expected):
                yield ValidationIssue(pointer, "type", f"expected {' or '.join(expected)}, got {json_type(value)}")
        if "enum" in schema and not any(json_equal(value, option) for option in schema["enum"]):
            yield ValidationIssue(pointer, "enum", f"{value!r} is not one of {schema['enum']!r}")
        if "const" in schema and not json_equal(value, schema["const"]):
            yield ValidationIssue(pointer, "const", f"expected {schema['const']!r}")

    def _object(self, value: dict, schema: dict, pointer: str, depth: int) -> Iterator[ValidationIssue]:
        for name in schema.get("required", []):
            if name not in value:
                yield ValidationIssue(pointer, "required", f"missing required member {name!r}")
        for name, needed in (schema.get("dependentRequired") or {}).items():
            if name in value:
                for other in needed:
                    if other not in value:
                        yield ValidationIssue(pointer, "dependentRequired", f"{name!r} requires {other!r}")
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            yield ValidationIssue(pointer, "minProperties", f"needs at least {schema['minProperties']} members")
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            yield ValidationIssue(pointer, "maxProperties", f"allows at most {schema['maxProperties']} members")
        properties = schema.get("properties") or {}
        patterns = [(re.compile(p), sub) for p, sub in (schema.get("patternProperties") or {}).items()]
        for name, member in value.items():
            member_pointer = pointer + "/" + escape_token(name)
            if "propertyNames" in schema:
                for issue in self._validate(name, schema["propertyNames"], member_pointer, depth + 1):
                    yield ValidationIssue(member_pointer, "propertyNames", f"bad member name: {issue.message}")
            matched = False
            if name in properties:
                matched = True
                yield from self._validate(member, properties[name], member_pointer, depth + 1)
            for regex, sub in patterns:
                if regex.search(name):
                    matched = True
                    yield from self._validate(member, sub, member_pointer, depth + 1)
            if not matched and "additionalProperties" in schema:
                extra = schema["additionalProperties"]
                if extra is False:
                    yield ValidationIssue(member_pointer, "additionalProperties", f"unexpected member {name!r}")
                else:
                    yield from self._validate(member, extra, member_pointer, depth + 1)

    def _array(self, value: list, schema: dict, pointer: str, depth: int) -> Iterator[ValidationIssue]:
        if "minItems" in schema and len(value) < schema["minItems"]:
            yield ValidationIssue(pointer, "minItems", f"needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            yield ValidationIssue(pointer, "maxItems", f"allows at most {schema['maxItems']} items")
        if schema.get("uniqueItems"):
            for i in range(len(value)):
                for j in range(i + 1, len(value)):
                    if json_equal(value[i], value[j]):
                        yield ValidationIssue(pointer, "uniqueItems", f"items {i} and {j} are equal")
        prefix = schema.get("prefixItems") or []
        for index, (item, sub) in enumerate(zip(value, prefix)):
            yield from self._validate(item, sub, f"{pointer}/{index}", depth + 1)
        if "items" in schema:
            for index in range(len(prefix), len(value)):
                yield from self._validate(value[index], schema["items"], f"{pointer}/{index}", depth + 1)
        if "contains" in schema:
            hits = sum(1 for item in value if not any(True for _ in self._validate(item, schema["contains"], pointer, depth + 1)))
            low = schema.get("minContains", 1)
            high = schema.get("maxContains")
            if hits < low:
                yield ValidationIssue(pointer, "contains", f"needs at least {low} matching item(s), found {hits}")
            if high is not None and hits > high:
                yield ValidationIssue(pointer, "contains", f"allows at most {high} matching item(s), found {hits}")

    def _string(self, value: str, schema: dict, pointer: str) -> Iterator[ValidationIssue]:
        if "minLength" in schema and len(value) < schema["minLength"]:
            yield ValidationIssue(pointer, "minLength", f"shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            yield ValidationIssue(pointer, "maxLength", f"longer than {schema['maxLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            yield ValidationIssue(pointer, "pattern", f"does not match {schema['pattern']!r}")
        if self.check_formats and "format" in schema:
            regex = _FORMATS.get(schema["format"])
            if regex is not None and not regex.match(value):
                yield ValidationIssue(pointer, "format", f"not a valid {schema['format']}")

    def _number(self, value: float, schema: dict, pointer: str) -> Iterator[ValidationIssue]:
        if "minimum" in schema and value < schema["minimum"]:
            yield ValidationIssue(pointer, "minimum", f"{value} is less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            yield ValidationIssue(pointer, "maximum", f"{value} is greater than {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            yield ValidationIssue(pointer, "exclusiveMinimum", f"{value} must be greater than {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            yield ValidationIssue(pointer, "exclusiveMaximum", f"{value} must be less than {schema['exclusiveMaximum']}")
        if "multipleOf" in schema:
            quotient = value / schema["multipleOf"]
            if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
                yield ValidationIssue(pointer, "multipleOf", f"{value} is not a multiple of {schema['multipleOf']}")

    def _combinators(self, value: JSON, schema: dict, pointer: str, depth: int) -> Iterator[ValidationIssue]:
        def passes(sub: JSON) -> bool:
            return next(iter(self._validate(value, sub, pointer, depth + 1)), None) is None

        for sub in schema.get("allOf", []):
            yield from self._validate(value, sub, pointer, depth + 1)
        if "anyOf" in schema and not any(passes(sub) for sub in schema["anyOf"]):
            yield ValidationIssue(pointer, "anyOf", "does not match any of the allowed schemas")
        if "oneOf" in schema:
            count = sum(1 for sub in schema["oneOf"] if passes(sub))
            if count != 1:
                yield ValidationIssue(pointer, "oneOf", f"must match exactly one schema, matched {count}")
        if "not" in schema and passes(schema["not"]):
            yield ValidationIssue(pointer, "not", "matches a schema it must not match")
        if "if" in schema:
            branch = schema.get("then") if passes(schema["if"]) else schema.get("else")
            if branch is not None:
                yield from self._validate(value, branch, pointer, depth + 1)


def validate(doc: JSON, schema: JSON) -> None:
    """Raise ValidationFailed listing every problem of `doc` against `schema`."""
    SchemaValidator(schema).validate(doc)


def is_valid(doc: JSON, schema: JSON) -> bool:
    return SchemaValidator(schema).is_valid(doc)


def fill_defaults(doc: JSON, schema: JSON) -> JSON:
    """A copy of `doc` with "default" values of missing object members filled in, recursively."""
    if not isinstance(schema, dict):
        return copy.deepcopy(doc)
    if isinstance(doc, dict):
        result = copy.deepcopy(doc)
        for name, sub in (schema.get("properties") or {}).items():
            if name not in result and isinstance(sub, dict) and "default" in sub:
                result[name] = copy.deepcopy(sub["default"])
            if name in result:
                result[name] = fill_defaults(result[name], sub)
        return result
    if isinstance(doc, list) and isinstance(schema.get("items"), dict):
        return [fill_defaults(item, schema["items"]) for item in doc]
    return copy.deepcopy(doc)


def infer_schema(samples: Sequence[JSON]) -> dict:
    """A schema that all `samples` satisfy: types are unioned, members present in every object are
    required, and array item schemas are inferred from all items."""
    if not samples:
        return {}
    types = sorted({json_type(s) for s in samples})
    if "integer" in types and "number" in types:
        types.remove("integer")
    schema: dict[str, Any] = {"type": types[0] if len(types) == 1 else types}
    objects = [s for s in samples if isinstance(s, dict)]
    if objects:
        names: list[str] = []
        for obj in objects:
            names.extend(n for n in obj if n not in names)
        schema["properties"] = {n: infer_schema([o[n] for o in objects if n in o]) for n in names}
        required = [n for n in names if all(n in o for o in objects)]
        if required:
            schema["required"] = required
    arrays = [s for s in samples if isinstance(s, list)]
    items = [item for array in arrays for item in array]
    if items:
        schema["items"] = infer_schema(items)
    return schema


# -- document helpers ---------------------------------------------------------------------------------


def flatten(doc: JSON, separator: str = ".") -> dict[str, JSON]:
    """{"a": {"b": [1, 2]}} -> {"a.b.0": 1, "a.b.1": 2}; empty objects and arrays are kept as leaves."""
    flat: dict[str, JSON] = {}

    def visit(value: JSON, prefix: str) -> None:
        if isinstance(value, dict) and value:
            for key, child in value.items():
                if separator in key:
                    raise ValueError(f"key {key!r} contains the separator {separator!r}")
                visit(child, f"{prefix}{separator}{key}" if prefix else key)
        elif isinstance(value, list) and value:
            for index, child in enumerate(value):
                visit(child, f"{prefix}{separator}{index}" if prefix else str(index))
        else:
            flat[prefix] = copy.deepcopy(value)

    visit(doc, "")
    return flat


def unflatten(flat: Mapping[str, JSON], separator: str = ".") -> JSON:
    """Inverse of flatten: numeric keys become array indexes when a level's keys are exactly 0..n-1."""
    tree: dict = {}
    for key, value in flat.items():
        parts = key.split(separator) if key else [""]
        node = tree
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ValueError(f"conflicting keys at {part!r} in {key!r}")
            node = child
        if parts[-1] in node and isinstance(node[parts[-1]], dict):
            raise ValueError(f"conflicting keys at {key!r}")
        node[parts[-1]] = copy.deepcopy(value)

    def arrays(value: JSON) -> JSON:
        if not isinstance(value, dict):
            return value
        converted = {k: arrays(v) for k, v in value.items()}
        if converted and sorted(converted) == sorted(str(i) for i in range(len(converted))):
            return [converted[str(i)] for i in range(len(converted))]
        return converted

    result = arrays(tree)
    if isinstance(result, dict) and list(result) == [""]:
        return result[""]
    return result


def deep_merge(base: JSON, override: JSON, *, lists: str = "replace") -> JSON:
    """Merge `override` into a copy of `base`: objects merge recursively, other values are replaced.

    lists: "replace" (default), "append" (base items then override items) or "unique" (append, skipping
    items already present).
    """
    if lists not in ("replace", "append", "unique"):
        raise ValueError(f"lists must be replace, append or unique, got {lists!r}")
    if isinstance(base, dict) and isinstance(override, dict):
        result = copy.deepcopy(base)
        for key, value in override.items():
            result[key] = deep_merge(result[key], value, lists=lists) if key in result else copy.deepcopy(value)
        return result
    if isinstance(base, list) and isinstance(override, list) and lists != "replace":
        result = copy.deepcopy(base)
        for item in override:
            if lists == "append" or not any(json_equal(item, existing) for existing in result):
                result.append(copy.deepcopy(item))
        return result
    return copy.deepcopy(override)


def pick(doc: JSON, pointers: Iterable[str]) -> JSON:
    """A new document with only the given pointers (missing ones are skipped)."""
    result: JSON = {}
    for pointer in pointers:
        if exists(doc, pointer):
            result = set_pointer(result, pointer, resolve(doc, pointer))
    return result


def omit(doc: JSON, pointers: Iterable[str]) -> JSON:
    """A copy of `doc` without the given pointers (missing ones are ignored)."""
    result = copy.deepcopy(doc)
    # Remove longer pointers first so removing array elements does not shift later targets.
    for pointer in sorted(set(pointers), key=lambda p: parse_pointer(p), reverse=True):
        if pointer and exists(result, pointer):
            remove_in_place(result, pointer)
    return result


def redact(doc: JSON, expressions: Iterable[str], mask: JSON = "***") -> JSON:
    """Replace every node selected by the JSONPath expressions with `mask` (e.g. passwords in logs)."""
    result = doc
    for expression in expressions:
        result = JSONPath(expression).update(result, mask)
    return result


def _canonical_number(value: float | int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        raise ValueError("NaN and infinity are not valid JSON")
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def canonical_dumps(doc: JSON) -> str:
    """Deterministic JSON text: sorted keys, no whitespace, integral floats written as integers.

    Two documents that are json_equal produce the same text, which makes it suitable for hashing.
    """
    if isinstance(doc, dict):
        items = sorted(doc.items())
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{canonical_dumps(v)}" for k, v in items) + "}"
    if isinstance(doc, list):
        return "[" + ",".join(canonical_dumps(v) for v in doc) + "]"
    if isinstance(doc, (int, float)) and not isinstance(doc, bool):
        return _canonical_number(doc)
    return json.dumps(doc, ensure_ascii=False)


@dataclass
class DocumentStats:
    """Shape of a document: how many values of each type, how deep, how many members at most."""

    counts: dict[str, int] = field(default_factory=dict)
    max_depth: int = 0
    widest_object: int = 0
    longest_array: int = 0


def document_stats(doc: JSON) -> DocumentStats:
    stats = DocumentStats()

    def visit(value: JSON, depth: int) -> None:
        kind = json_type(value)
        stats.counts[kind] = stats.counts.get(kind, 0) + 1
        stats.max_depth = max(stats.max_depth, depth)
        if isinstance(value, dict):
            stats.widest_object = max(stats.widest_object, len(value))
        if isinstance(value, list):
            stats.longest_array = max(stats.longest_array, len(value))
        for _, child in _children(value):
            visit(child, depth + 1)

    visit(doc, 0)
    return stats


def describe_patch(patch: Sequence[Mapping[str, Any]]) -> list[str]:
    """One human-readable line per operation, for change logs and review screens."""
    lines = []
    for operation in validate_patch(list(patch)):
        op, path = operation["op"], operation["path"] or "/"
        if op == "add":
            lines.append(f"added {path} = {canonical_dumps(operation['value'])}")
        elif op == "remove":
            lines.append(f"removed {path}")
        elif op == "replace":
            lines.append(f"changed {path} to {canonical_dumps(operation['value'])}")
        elif op == "move":
            lines.append(f"moved {operation['from'] or '/'} to {path}")
        elif op == "copy":
            lines.append(f"copied {operation['from'] or '/'} to {path}")
        else:
            lines.append(f"checked {path} == {canonical_dumps(operation['value'])}")
    return lines


def loads_lines(text: str) -> list[JSON]:
    """Parse JSON Lines text (one document per line, blank lines ignored) with line numbers in errors."""
    documents = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            documents.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise JsonKitError(f"line {number}: {exc.msg} (column {exc.colno})") from None
    return documents


def dumps_lines(documents: Iterable[JSON]) -> str:
    """JSON Lines text: one compact document per line, ending with a newline."""
    return "".join(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n" for doc in documents)


# -- relative pointers and templates ------------------------------------------------------------------

_RELATIVE_POINTER = re.compile(r"^(0|[1-9][0-9]*)([+-](?:0|[1-9][0-9]*))?(#|(?:/.*)?)$")


def resolve_relative(doc: JSON, start: str, relative: str) -> JSON:
    """Resolve a Relative JSON Pointer ("1/name", "0#", "2-1/id") from the node at `start`.

    The leading number climbs that many levels; an optional +n/-n then moves between array siblings;
    "#" returns the key or index of the node reached instead of its value.
    """
    match = _RELATIVE_POINTER.match(relative)
    if not match:
        raise PointerError("malformed relative JSON pointer", relative)
    up, shift, rest = match.groups()
    tokens = parse_pointer(start)
    levels = int(up)
    if levels > len(tokens):
        raise PointerError(f"cannot go up {levels} level(s) from {start!r}", relative)
    tokens = tokens[: len(tokens) - levels]
    if shift:
        if not tokens:
            raise PointerError("the root has no siblings", relative)
        parent = resolve(doc, tokens[:-1])
        if not isinstance(parent, list):
            raise PointerError("index shifts only work inside arrays", relative)
        index = int(tokens[-1]) + int(shift)
        if not 0 <= index < len(parent):
            raise PointerError(f"shifted index {index} is out of range", relative)
        tokens[-1] = str(index)
    if rest == "#":
        if not tokens:
            raise PointerError("the root has no key", relative)
        parent = resolve(doc, tokens[:-1])
        return int(tokens[-1]) if isinstance(parent, list) else tokens[-1]
    return resolve(doc, tokens + parse_pointer(rest))


_TEMPLATE_FIELD = re.compile(r"\$\{(/[^}]*|)\}")


def render_template(template: JSON, context: JSON) -> JSON:
    """Fill a JSON template from a context document.

    A string that is exactly "${/pointer}" is replaced by the value there (any type); "${...}" inside
    longer strings is replaced by the value's text. Missing pointers raise PointerError.
    """
    if isinstance(template, dict):
        return {render_template(k, context) if isinstance(k, str) else k: render_template(v, context)
                for k, v in template.items()}
    if isinstance(template, list):
        return [render_template(item, context) for item in template]
    if not isinstance(template, str):
        return copy.deepcopy(template)
    whole = _TEMPLATE_FIELD.fullmatch(template)
    if whole:
        return copy.deepcopy(resolve(context, whole.group(1)))

    def text(match: re.Match) -> str:
        value = resolve(context, match.group(1))
        return value if isinstance(value, str) else canonical_dumps(value)

    return _TEMPLATE_FIELD.sub(text, template)


# -- collections of documents -------------------------------------------------------------------------


def project(doc: JSON, fields: Mapping[str, str]) -> dict[str, JSON]:
    """Build a flat record from JSONPath expressions: {"name": "$.user.name", "tags": "$.tags[*]"}.

    Expressions that can only select one node ($.a.b, $.a[0]) give a value (or None when absent); others
    give a list of every selected value.
    """
    record: dict[str, JSON] = {}
    for name, expression in fields.items():
        path = JSONPath(expression)
        values = path.values(doc)
        record[name] = (values[0] if values else None) if path.query.is_singular else values
    return record


def sort_documents(documents: Iterable[JSON], pointer: str, *, reverse: bool = False) -> list[JSON]:
    """Sort by the value at `pointer`; documents without it go last; numbers sort before strings."""
    present, missing = [], []
    for doc in documents:
        (present if exists(doc, pointer) else missing).append(doc)

    def key(doc: JSON):
        value = resolve(doc, pointer)
        kind = json_type(value)
        rank = {"null": 0, "boolean": 1, "integer": 2, "number": 2, "string": 3}.get(kind, 4)
        return (rank, value if rank in (1, 2, 3) else canonical_dumps(value))

    return sorted(present, key=key, reverse=reverse) + missing


def group_documents(documents: Iterable[JSON], pointer: str) -> dict[str, list[JSON]]:
    """Group by the value at `pointer`, keyed by its canonical JSON text ("missing" when absent)."""
    groups: dict[str, list[JSON]] = {}
    for doc in documents:
        key = canonical_dumps(resolve(doc, pointer)) if exists(doc, pointer) else "missing"
        groups.setdefault(key, []).append(doc)
    return groups


def index_documents(documents: Iterable[JSON], pointer: str) -> dict[JSON, JSON]:
    """Map each document's key (the value at `pointer`) to the document; duplicate keys are an error."""
    index: dict[JSON, JSON] = {}
    for doc in documents:
        key = resolve(doc, pointer)
        if isinstance(key, (dict, list)):
            raise JsonKitError(f"key at {pointer!r} must be a scalar, got {json_type(key)}")
        if key in index:
            raise JsonKitError(f"duplicate key {key!r} at {pointer!r}")
        index[key] = doc
    return index


@dataclass
class KeyedDiff:
    """Differences between two collections of records matched by a key."""

    added: list[JSON] = field(default_factory=list)
    removed: list[JSON] = field(default_factory=list)
    changed: dict[JSON, list[dict]] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def diff_by_key(old: Iterable[JSON], new: Iterable[JSON], pointer: str) -> KeyedDiff:
    """Compare record sets (e.g. two exports of a users table) by the key at `pointer`.

    `changed` maps each key whose record differs to the JSON Patch from the old to the new record.
    """
    before = index_documents(old, pointer)
    after = index_documents(new, pointer)
    result = KeyedDiff()
    for key, doc in after.items():
        if key not in before:
            result.added.append(doc)
        else:
            patch = make_patch(before[key], doc)
            if patch:
                result.changed[key] = patch
    result.removed = [doc for key, doc in before.items() if key not in after]
    return result


# -- an editable document with undo -------------------------------------------------------------------


class Document:
    """A JSON document edited through patches, keeping undo/redo stacks of inverse patches.

        doc = Document({"title": "Draft"})
        doc.set("/title", "Final")
        doc.undo()          # title is "Draft" again
    """

    def __init__(self, data: JSON = None, *, schema: JSON | None = None, history_limit: int = 100):
        self._validator = SchemaValidator(schema) if schema is not None else None
        self._data = copy.deepcopy(data if data is not None else {})
        if self._validator is not None:
            self._validator.validate(self._data)
        self._undo: list[list[dict]] = []
        self._redo: list[list[dict]] = []
        self.history_limit = history_limit

    @property
    def data(self) -> JSON:
        """A copy of the current content (editing it does not change the document)."""
        return copy.deepcopy(self._data)

    def get(self, pointer: str, default: JSON = None) -> JSON:
        return copy.deepcopy(resolve_or(self._data, pointer, default))

    def query(self, expression: str) -> list[JSON]:
        return copy.deepcopy(query(self._data, expression))

    def apply(self, patch: Sequence[Mapping[str, Any]]) -> None:
        """Apply a patch; with a schema, a patch that would make the document invalid is rejected."""
        updated = apply_patch(self._data, patch)
        if self._validator is not None:
            self._validator.validate(updated)
        inverse = make_patch(updated, self._data)
        self._data = updated
        self._undo.append(inverse)
        if len(self._undo) > self.history_limit:
            self._undo.pop(0)
        self._redo.clear()

    def set(self, pointer: str, value: JSON) -> None:
        op = "replace" if exists(self._data, pointer) and pointer else "add"
        self.apply([{"op": op, "path": pointer, "value": value}])

    def remove(self, pointer: str) -> None:
        self.apply([{"op": "remove", "path": pointer}])

    def undo(self) -> bool:
        """Revert the last change; False when there is nothing to undo."""
        if not self._undo:
            return False
        inverse = self._undo.pop()
        previous = apply_patch(self._data, inverse)
        self._redo.append(make_patch(previous, self._data))
        self._data = previous
        return True

    def redo(self) -> bool:
        if not self._redo:
            return False
        patch = self._redo.pop()
        following = apply_patch(self._data, patch)
        self._undo.append(make_patch(following, self._data))
        self._data = following
        return True

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self._data, indent=indent, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, **options) -> Document:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise JsonKitError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        return cls(data, **options)
