"""minitpl: a small Jinja-like template engine.

Syntax::

    {{ expression }}                       output (escaped when the environment autoescapes)
    {% if cond %}...{% elif cond %}...{% else %}...{% endif %}
    {% for x in items if cond %}...{% else %}...{% endfor %}   loop.index / index0 / first / last / length
    {% for key, value in mapping.items() %}...{% endfor %}
    {% set name = expression %}
    {% include "other.html" %}
    {% raw %}{{ not parsed }}{% endraw %}
    {# comment #}

A '-' just inside a delimiter ({%- ... -%}, {{- ... -}}) strips the whitespace on that side.

Expressions: literals ('str', 1, 2.5, true, false, none, [lists]), names, attribute and item access
(a.b, a['b'], a[0]), calls (range(3), x.items()), filters (name|upper, items|join(', ')),
arithmetic (+ - * / // %), string concatenation (~), comparisons (== != < <= > >= in, not in),
boolean logic (and, or, not) and conditional expressions (a if cond else b).

Every for loop opens its own scope: names bound in it (the loop variables, `loop`, anything `set`
inside) disappear when the loop ends, and an inner loop never disturbs the outer loop's `loop`.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

# --- errors and values --------------------------------------------------------------------------


class TemplateError(Exception):
    """Base class of every error raised by the engine."""


class TemplateSyntaxError(TemplateError):
    def __init__(self, message: str, lineno: int, name: str | None = None) -> None:
        where = f"{name or '<string>'}, line {lineno}"
        super().__init__(f"{message} ({where})")
        self.message = message
        self.lineno = lineno
        self.name = name


class TemplateNotFound(TemplateError):
    pass


class UndefinedError(TemplateError):
    pass


class Markup(str):
    """A string that is already safe to put into HTML; autoescaping leaves it alone."""

    def __html__(self) -> str:
        return self

    def __add__(self, other: str) -> Markup:
        return Markup(str.__add__(self, escape(other)))

    def __repr__(self) -> str:
        return f"Markup({str.__repr__(self)})"


def escape(value: Any) -> Markup:
    """HTML-escape `value` unless it is already Markup (or has an __html__ method)."""
    if hasattr(value, "__html__"):
        return Markup(value.__html__())
    return Markup(html.escape(str(value), quote=True))


class Undefined:
    """What a missing name or attribute evaluates to: renders as '', is falsy, iterates as empty."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __str__(self) -> str:
        return ""

    def __bool__(self) -> bool:
        return False

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Undefined)

    def __hash__(self) -> int:
        return 0

    def __getattr__(self, attr: str) -> Undefined:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return type(self)(f"{self._name}.{attr}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"


class StrictUndefined(Undefined):
    """An Undefined that raises UndefinedError on any use except `is defined`-style truth tests in `default`."""

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise UndefinedError(f"{self._name!r} is undefined")

    __str__ = __iter__ = __len__ = __bool__ = _fail  # type: ignore[assignment]


def is_undefined(value: Any) -> bool:
    return isinstance(value, Undefined)


# --- template lexer ------------------------------------------------------------------------------


@dataclass
class Token:
    kind: str  # "text", "var" or "block"
    value: str
    lineno: int


_OPEN_RE = re.compile(r"\{\{|\{%|\{#")
_CLOSERS = {"{{": "}}", "{%": "%}", "{#": "#}"}
_ENDRAW_RE = re.compile(r"\{%-?\s*endraw\s*-?%\}")


def tokenize(source: str, name: str | None = None) -> list[Token]:
    """Split template source into text, variable and block tokens, applying '-' whitespace control."""
    tokens: list[Token] = []
    pos = 0
    lineno = 1
    strip_leading = False
    while pos <= len(source):
        match = _OPEN_RE.search(source, pos)
        text_end = match.start() if match else len(source)
        text = source[pos:text_end]
        if strip_leading:
            text = text.lstrip()
        if match and source.startswith("-", match.end()):
            text = text.rstrip()
        if text:
            tokens.append(Token("text", text, lineno))
        lineno += source.count("\n", pos, text_end)
        if not match:
            break
        opener = match.group()
        closer = _CLOSERS[opener]
        end = source.find(closer, match.end())
        if end == -1:
            raise TemplateSyntaxError(f"missing {closer!r} to close {opener!r}", lineno, name)
        inner = source[match.end():end]
        strip_leading = inner.endswith("-")
        inner = inner.removeprefix("-").removesuffix("-").strip()
        pos = end + len(closer)
        if opener == "{%" and inner == "raw":
            endraw = _ENDRAW_RE.search(source, pos)
            if endraw is None:
                raise TemplateSyntaxError("missing {% endraw %}", lineno, name)
            tokens.append(Token("text", source[pos:endraw.start()], lineno))
            lineno += source.count("\n", match.start(), endraw.end())
            pos = endraw.end()
            strip_leading = False
            continue
        if opener != "{#":
            if not inner:
                raise TemplateSyntaxError(f"empty {opener} {closer}", lineno, name)
            tokens.append(Token("var" if opener == "{{" else "block", inner, lineno))
        lineno += source.count("\n", match.start(), pos)
    return tokens


# --- expressions ---------------------------------------------------------------------------------

_EXPR_TOKEN_RE = re.compile(
    r"""\s*(?:
        (?P<float>\d+\.\d+)
      | (?P<int>\d+)
      | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>==|!=|<=|>=|//|[-+*/%~<>()\[\].,|:=])
    )""",
    re.X,
)
_STRING_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}


def _unescape_string(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: _STRING_ESCAPES.get(m.group(1), m.group(1)), literal[1:-1])


def lex_expression(text: str, lineno: int, name: str | None) -> list[tuple[str, Any]]:
    tokens: list[tuple[str, Any]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _EXPR_TOKEN_RE.match(text, pos)
        if not match:
            raise TemplateSyntaxError(f"unexpected character {text[pos:].strip()[:1]!r}", lineno, name)
        kind = match.lastgroup
        raw = match.group(kind)
        if kind == "int":
            tokens.append(("const", int(raw)))
        elif kind == "float":
            tokens.append(("const", float(raw)))
        elif kind == "string":
            tokens.append(("const", _unescape_string(raw)))
        else:
            tokens.append((kind, raw))
        pos = match.end()
    tokens.append(("end", None))
    return tokens


class Expr:
    def eval(self, ctx: Context) -> Any:
        raise NotImplementedError


@dataclass
class Const(Expr):
    value: Any

    def eval(self, ctx: Context) -> Any:
        return self.value


@dataclass
class Name(Expr):
    name: str

    def eval(self, ctx: Context) -> Any:
        return ctx.lookup(self.name)


@dataclass
class ListExpr(Expr):
    items: list[Expr]

    def eval(self, ctx: Context) -> Any:
        return [item.eval(ctx) for item in self.items]


@dataclass
class Getattr(Expr):
    """`a.b`: attribute first, then item (so dicts work with dots), else Undefined."""

    target: Expr
    attr: str

    def eval(self, ctx: Context) -> Any:
        obj = self.target.eval(ctx)
        if is_undefined(obj):
            return getattr(obj, self.attr)
        if self.attr.startswith("_"):
            raise TemplateError(f"access to private attribute {self.attr!r} is not allowed")
        try:
            return getattr(obj, self.attr)
        except AttributeError:
            pass
        try:
            return obj[self.attr]
        except (TypeError, LookupError):
            return ctx.env.undefined(f"{self.attr}")


@dataclass
class Getitem(Expr):
    target: Expr
    key: Expr

    def eval(self, ctx: Context) -> Any:
        obj = self.target.eval(ctx)
        key = self.key.eval(ctx)
        try:
            return obj[key]
        except (TypeError, LookupError):
            if isinstance(key, str) and not key.startswith("_") and hasattr(obj, key):
                return getattr(obj, key)
            return ctx.env.undefined(f"[{key!r}]")


@dataclass
class Call(Expr):
    func: Expr
    args: list[Expr]
    kwargs: dict[str, Expr]

    def eval(self, ctx: Context) -> Any:
        func = self.func.eval(ctx)
        if not callable(func):
            raise TemplateError(f"{func!r} is not callable")
        return func(*(arg.eval(ctx) for arg in self.args), **{k: v.eval(ctx) for k, v in self.kwargs.items()})


@dataclass
class Filter(Expr):
    target: Expr
    name: str
    args: list[Expr]
    kwargs: dict[str, Expr]
    lineno: int

    def eval(self, ctx: Context) -> Any:
        func = ctx.env.filters.get(self.name)
        if func is None:
            raise TemplateError(f"unknown filter {self.name!r} (line {self.lineno})")
        value = self.target.eval(ctx)
        args = [arg.eval(ctx) for arg in self.args]
        kwargs = {key: arg.eval(ctx) for key, arg in self.kwargs.items()}
        try:
            if getattr(func, "needs_env", False):
                return func(ctx.env, value, *args, **kwargs)
            return func(value, *args, **kwargs)
        except TypeError as exc:
            raise TemplateError(f"filter {self.name!r} failed (line {self.lineno}): {exc}") from None


_BINARY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "~": lambda a, b: str(a) + str(b),
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b,
    "not in": lambda a, b: a not in b,
}


@dataclass
class BinOp(Expr):
    op: str
    left: Expr
    right: Expr

    def eval(self, ctx: Context) -> Any:
        left, right = self.left.eval(ctx), self.right.eval(ctx)
        try:
            return _BINARY_OPS[self.op](left, right)
        except ZeroDivisionError:
            raise TemplateError(f"division by zero in {self.op!r}") from None
        except TypeError as exc:
            raise TemplateError(f"cannot apply {self.op!r} to {left!r} and {right!r}: {exc}") from None


@dataclass
class Not(Expr):
    operand: Expr

    def eval(self, ctx: Context) -> Any:
        return not self.operand.eval(ctx)


@dataclass
class Neg(Expr):
    operand: Expr

    def eval(self, ctx: Context) -> Any:
        return -self.operand.eval(ctx)


@dataclass
class And(Expr):
    left: Expr
    right: Expr

    def eval(self, ctx: Context) -> Any:
        return self.left.eval(ctx) and self.right.eval(ctx)


@dataclass
class Or(Expr):
    left: Expr
    right: Expr

    def eval(self, ctx: Context) -> Any:
        return self.left.eval(ctx) or self.right.eval(ctx)


@dataclass
class CondExpr(Expr):
    then: Expr
    test: Expr
    otherwise: Expr | None

    def eval(self, ctx: Context) -> Any:
        if self.test.eval(ctx):
            return self.then.eval(ctx)
        return self.otherwise.eval(ctx) if self.otherwise else ctx.env.undefined("<else>")


class ExprParser:
    """Recursive-descent parser; one method per precedence level, loosest first."""

    def __init__(self, text: str, lineno: int, name: str | None) -> None:
        self.tokens = lex_expression(text, lineno, name)
        self.pos = 0
        self.lineno = lineno
        self.name = name

    def error(self, message: str) -> TemplateSyntaxError:
        return TemplateSyntaxError(message, self.lineno, self.name)

    def peek(self, offset: int = 0) -> tuple[str, Any]:
        return self.tokens[min(self.pos + offset, len(self.tokens) - 1)]

    def next(self) -> tuple[str, Any]:
        token = self.peek()
        self.pos += 1
        return token

    def accept(self, kind: str, value: Any = None) -> bool:
        tok_kind, tok_value = self.peek()
        if tok_kind == kind and (value is None or tok_value == value):
            self.pos += 1
            return True
        return False

    def expect(self, kind: str, value: Any = None) -> Any:
        tok_kind, tok_value = self.next()
        if tok_kind != kind or (value is not None and tok_value != value):
            wanted = value if value is not None else kind
            raise self.error(f"expected {wanted!r}, got {tok_value!r}")
        return tok_value

    def at_end(self) -> bool:
        return self.peek()[0] == "end"

    def parse(self) -> Expr:
        expr = self.parse_conditional()
        if not self.at_end():
            raise self.error(f"unexpected {self.peek()[1]!r} after expression")
        return expr

    def parse_conditional(self) -> Expr:
        expr = self.parse_or()
        if self.accept("name", "if"):
            test = self.parse_or()
            otherwise = self.parse_conditional() if self.accept("name", "else") else None
            return CondExpr(expr, test, otherwise)
        return expr

    def parse_or(self) -> Expr:
        expr = self.parse_and()
        while self.accept("name", "or"):
            expr = Or(expr, self.parse_and())
        return expr

    def parse_and(self) -> Expr:
        expr = self.parse_not()
        while self.accept("name", "and"):
            expr = And(expr, self.parse_not())
        return expr

    def parse_not(self) -> Expr:
        if self.accept("name", "not"):
            return Not(self.parse_not())
        return self.parse_compare()

    def parse_compare(self) -> Expr:
        expr = self.parse_concat()
        while True:
            kind, value = self.peek()
            if kind == "op" and value in ("==", "!=", "<", "<=", ">", ">="):
                self.pos += 1
                expr = BinOp(value, expr, self.parse_concat())
            elif kind == "name" and value == "in":
                self.pos += 1
                expr = BinOp("in", expr, self.parse_concat())
            elif kind == "name" and value == "not" and self.peek(1) == ("name", "in"):
                self.pos += 2
                expr = BinOp("not in", expr, self.parse_concat())
            else:
                return expr

    def parse_concat(self) -> Expr:
        expr = self.parse_additive()
        while self.accept("op", "~"):
            expr = BinOp("~", expr, self.parse_additive())
        return expr

    def parse_additive(self) -> Expr:
        expr = self.parse_multiplicative()
        while self.peek() in (("op", "+"), ("op", "-")):
            op = self.next()[1]
            expr = BinOp(op, expr, self.parse_multiplicative())
        return expr

    def parse_multiplicative(self) -> Expr:
        expr = self.parse_unary()
        while self.peek() in (("op", "*"), ("op", "/"), ("op", "//"), ("op", "%")):
            op = self.next()[1]
            expr = BinOp(op, expr, self.parse_unary())
        return expr

    def parse_unary(self) -> Expr:
        if self.accept("op", "-"):
            return Neg(self.parse_unary())
        return self.parse_postfix(self.parse_primary())

    def parse_primary(self) -> Expr:
        kind, value = self.next()
        if kind == "const":
            return Const(value)
        if kind == "name":
            literals = {"true": True, "false": False, "none": None, "True": True, "False": False, "None": None}
            return Const(literals[value]) if value in literals else Name(value)
        if (kind, value) == ("op", "("):
            expr = self.parse_conditional()
            self.expect("op", ")")
            return expr
        if (kind, value) == ("op", "["):
            items = [] if self.accept("op", "]") else self.parse_list_tail("]")
            return ListExpr(items)
        raise self.error(f"unexpected {value!r}" if kind != "end" else "expression expected")

    def parse_list_tail(self, closer: str) -> list[Expr]:
        items = [self.parse_conditional()]
        while self.accept("op", ","):
            if self.peek() == ("op", closer):
                break
            items.append(self.parse_conditional())
        self.expect("op", closer)
        return items

    def parse_arguments(self) -> tuple[list[Expr], dict[str, Expr]]:
        """Call arguments after '(': positional ones first, then name=value ones, up to ')'."""
        args: list[Expr] = []
        kwargs: dict[str, Expr] = {}
        while not self.accept("op", ")"):
            if args or kwargs:
                self.expect("op", ",")
                if self.accept("op", ")"):
                    break
            if self.peek()[0] == "name" and self.peek(1) == ("op", "="):
                key = self.next()[1]
                self.pos += 1
                kwargs[key] = self.parse_conditional()
            elif kwargs:
                raise self.error("positional argument after keyword argument")
            else:
                args.append(self.parse_conditional())
        return args, kwargs

    def parse_postfix(self, expr: Expr) -> Expr:
        while True:
            if self.accept("op", "."):
                kind, value = self.next()
                if kind == "const" and isinstance(value, int):
                    expr = Getitem(expr, Const(value))
                elif kind == "name":
                    expr = Getattr(expr, value)
                else:
                    raise self.error(f"attribute name expected after '.', got {value!r}")
            elif self.accept("op", "["):
                key = self.parse_conditional()
                self.expect("op", "]")
                expr = Getitem(expr, key)
            elif self.accept("op", "("):
                expr = Call(expr, *self.parse_arguments())
            elif self.accept("op", "|"):
                name = self.expect("name")
                args: tuple[list[Expr], dict[str, Expr]] = ([], {})
                if self.accept("op", "("):
                    args = self.parse_arguments()
                expr = Filter(expr, name, *args, self.lineno)
            else:
                return expr


def parse_expression(text: str, lineno: int = 1, name: str | None = None) -> Expr:
    return ExprParser(text, lineno, name).parse()


# --- runtime context -----------------------------------------------------------------------------


class Context:
    """Variable lookup through a stack of scopes: globals, render arguments, then one per for loop."""

    def __init__(self, env: Environment, variables: dict[str, Any]) -> None:
        self.env = env
        self.scopes: list[dict[str, Any]] = [dict(env.globals), dict(variables)]

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return self.env.undefined(name)

    def set(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value

    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        if len(self.scopes) <= 2:
            raise TemplateError("scope stack underflow")
        self.scopes.pop()


@dataclass
class LoopInfo:
    """The `loop` variable inside a for loop."""

    index0: int
    length: int
    previtem: Any
    nextitem: Any

    @property
    def index(self) -> int:
        return self.index0 + 1

    @property
    def revindex(self) -> int:
        return self.length - self.index0

    @property
    def first(self) -> bool:
        return self.index0 == 0

    @property
    def last(self) -> bool:
        return self.index0 == self.length - 1

    def cycle(self, *values: Any) -> Any:
        if not values:
            raise TemplateError("loop.cycle() needs at least one value")
        return values[self.index0 % len(values)]


# --- template nodes ------------------------------------------------------------------------------


class Node:
    def render(self, ctx: Context, out: list[str]) -> None:
        raise NotImplementedError


def render_nodes(nodes: list[Node], ctx: Context, out: list[str]) -> None:
    for node in nodes:
        node.render(ctx, out)


@dataclass
class TextNode(Node):
    text: str

    def render(self, ctx: Context, out: list[str]) -> None:
        out.append(self.text)


@dataclass
class OutputNode(Node):
    expr: Expr

    def render(self, ctx: Context, out: list[str]) -> None:
        value = self.expr.eval(ctx)
        if value is None:
            return
        out.append(escape(value) if ctx.env.autoescape else str(value))


@dataclass
class IfNode(Node):
    branches: list[tuple[Expr, list[Node]]]
    else_body: list[Node]

    def render(self, ctx: Context, out: list[str]) -> None:
        for test, body in self.branches:
            if test.eval(ctx):
                render_nodes(body, ctx, out)
                return
        render_nodes(self.else_body, ctx, out)


@dataclass
class ForNode(Node):
    targets: list[str]
    iterable: Expr
    condition: Expr | None
    body: list[Node]
    else_body: list[Node]
    lineno: int

    def _bind(self, ctx: Context, item: Any) -> None:
        if len(self.targets) == 1:
            ctx.set(self.targets[0], item)
            return
        try:
            values = list(item)
        except TypeError:
            raise TemplateError(f"cannot unpack {item!r} (line {self.lineno})") from None
        if len(values) != len(self.targets):
            raise TemplateError(f"cannot unpack {len(values)} values into {len(self.targets)} (line {self.lineno})")
        for target, value in zip(self.targets, values):
            ctx.set(target, value)

    def render(self, ctx: Context, out: list[str]) -> None:
        iterable = self.iterable.eval(ctx)
        if isinstance(iterable, dict):
            iterable = iterable.keys()
        try:
            items = list(iterable)
        except TypeError:
            raise TemplateError(f"{iterable!r} is not iterable (line {self.lineno})") from None
        if self.condition is not None:
            kept = []
            for item in items:
                self._bind(ctx, item)
                if self.condition.eval(ctx):
                    kept.append(item)
            items = kept
        if not items:
            render_nodes(self.else_body, ctx, out)
        for index, item in enumerate(items):
            self._bind(ctx, item)
            previous = items[index - 1] if index else ctx.env.undefined("loop.previtem")
            following = items[index + 1] if index + 1 < len(items) else ctx.env.undefined("loop.nextitem")
            ctx.set("loop", LoopInfo(index, len(items), previous, following))
            render_nodes(self.body, ctx, out)


@dataclass
class SetNode(Node):
    name: str
    expr: Expr

    def render(self, ctx: Context, out: list[str]) -> None:
        ctx.set(self.name, self.expr.eval(ctx))


@dataclass
class IncludeNode(Node):
    template: Expr
    lineno: int

    def render(self, ctx: Context, out: list[str]) -> None:
        name = self.template.eval(ctx)
        if not isinstance(name, str):
            raise TemplateError(f"include needs a template name, got {name!r} (line {self.lineno})")
        ctx.env.get_template(name).render_into(ctx, out)


# --- template parser -----------------------------------------------------------------------------

_FOR_RE = re.compile(r"^for\s+(?P<targets>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s+in\s+(?P<rest>.+)$", re.S)
_SET_RE = re.compile(r"^set\s+(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<expr>.+)$", re.S)


class Parser:
    """Turns the token stream into a tree of nodes."""

    def __init__(self, tokens: list[Token], name: str | None) -> None:
        self.tokens = tokens
        self.pos = 0
        self.name = name

    def error(self, message: str, lineno: int) -> TemplateSyntaxError:
        return TemplateSyntaxError(message, lineno, self.name)

    def expr(self, text: str, lineno: int) -> Expr:
        return parse_expression(text, lineno, self.name)

    def parse(self) -> list[Node]:
        nodes, end = self.parse_until(())
        if end is not None:
            raise self.error(f"unexpected {{% {end.value} %}}", end.lineno)
        return nodes

    def parse_until(self, enders: tuple[str, ...]) -> tuple[list[Node], Token | None]:
        """Nodes up to a block tag whose first word is in `enders`; returns that tag too (None at EOF)."""
        nodes: list[Node] = []
        while self.pos < len(self.tokens):
            token = self.tokens[self.pos]
            self.pos += 1
            if token.kind == "text":
                nodes.append(TextNode(token.value))
            elif token.kind == "var":
                nodes.append(OutputNode(self.expr(token.value, token.lineno)))
            else:
                keyword = token.value.split(None, 1)[0]
                if keyword in enders:
                    return nodes, token
                nodes.append(self.parse_block(keyword, token))
        if enders:
            raise TemplateSyntaxError(f"missing {{% {enders[-1]} %}}", self.tokens[-1].lineno if self.tokens else 1, self.name)
        return nodes, None

    def parse_block(self, keyword: str, token: Token) -> Node:
        if keyword == "if":
            return self.parse_if(token)
        if keyword == "for":
            return self.parse_for(token)
        if keyword == "set":
            match = _SET_RE.match(token.value)
            if not match:
                raise self.error("expected {% set name = expression %}", token.lineno)
            return SetNode(match["name"], self.expr(match["expr"], token.lineno))
        if keyword == "include":
            return IncludeNode(self.expr(token.value[len("include"):], token.lineno), token.lineno)
        raise self.error(f"unknown tag {keyword!r}", token.lineno)

    def parse_if(self, token: Token) -> IfNode:
        branches: list[tuple[Expr, list[Node]]] = []
        test = self.expr(token.value[2:], token.lineno)
        while True:
            body, end = self.parse_until(("elif", "else", "endif"))
            branches.append((test, body))
            assert end is not None
            keyword = end.value.split(None, 1)[0]
            if keyword == "elif":
                test = self.expr(end.value[4:], end.lineno)
                continue
            if keyword == "else":
                else_body, _ = self.parse_until(("endif",))
                return IfNode(branches, else_body)
            return IfNode(branches, [])

    def parse_for(self, token: Token) -> ForNode:
        match = _FOR_RE.match(token.value)
        if not match:
            raise self.error("expected {% for name in expression %}", token.lineno)
        targets = [t.strip() for t in match["targets"].split(",")]
        rest = match["rest"]
        condition = None
        # `for x in items if cond`: split on the last top-level ' if ' that is not part of a conditional.
        head, sep, tail = rest.rpartition(" if ")
        if sep and " else " not in tail:
            rest, condition = head, self.expr(tail, token.lineno)
        iterable = self.expr(rest, token.lineno)
        body, end = self.parse_until(("else", "endfor"))
        else_body: list[Node] = []
        if end is not None and end.value.split(None, 1)[0] == "else":
            else_body, _ = self.parse_until(("endfor",))
        return ForNode(targets, iterable, condition, body, else_body, token.lineno)


# --- filters -------------------------------------------------------------------------------------


def _needs_env(func: Callable[..., Any]) -> Callable[..., Any]:
    func.needs_env = True  # type: ignore[attr-defined]
    return func


def _filter_default(value: Any, default: Any = "", boolean: bool = False) -> Any:
    if is_undefined(value) or (boolean and not value):
        return default
    return value


def _filter_truncate(value: Any, length: int = 80, end: str = "...") -> str:
    text = str(value)
    if len(text) <= length:
        return text
    cut = text[: max(0, length - len(end))]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut + end


@_needs_env
def _filter_join(env: Environment, value: Any, separator: str = "", attribute: str | None = None) -> str:
    items = list(value)
    if attribute is not None:
        items = [getattr(i, attribute, None) if not isinstance(i, dict) else i.get(attribute) for i in items]
    if env.autoescape:
        return Markup(escape(separator).join(escape(i) for i in items))
    return separator.join(str(i) for i in items)


def _filter_round(value: Any, precision: int = 0, method: str = "common") -> float:
    if method == "common":
        factor = 10**precision
        return math.floor(abs(value) * factor + 0.5) / factor * (1 if value >= 0 else -1)
    if method == "floor":
        return math.floor(value * 10**precision) / 10**precision
    if method == "ceil":
        return math.ceil(value * 10**precision) / 10**precision
    raise TemplateError(f"unknown rounding method {method!r}")


def _filter_sort(value: Any, reverse: bool = False, attribute: str | None = None) -> list[Any]:
    if attribute is None:
        return sorted(value, reverse=reverse)
    return sorted(value, key=lambda i: i[attribute] if isinstance(i, dict) else getattr(i, attribute), reverse=reverse)


def _filter_int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return default


def _filter_float(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


DEFAULT_FILTERS: dict[str, Callable[..., Any]] = {
    "upper": lambda v: str(v).upper(),
    "lower": lambda v: str(v).lower(),
    "title": lambda v: str(v).title(),
    "capitalize": lambda v: str(v).capitalize(),
    "trim": lambda v: str(v).strip(),
    "length": len,
    "count": len,
    "default": _filter_default,
    "d": _filter_default,
    "join": _filter_join,
    "first": lambda v: next(iter(v), None),
    "last": lambda v: list(v)[-1] if list(v) else None,
    "reverse": lambda v: v[::-1] if isinstance(v, str) else list(reversed(list(v))),
    "sort": _filter_sort,
    "unique": lambda v: list(dict.fromkeys(v)),
    "replace": lambda v, old, new: str(v).replace(old, new),
    "truncate": _filter_truncate,
    "wordcount": lambda v: len(str(v).split()),
    "escape": escape,
    "e": escape,
    "safe": lambda v: Markup(str(v)),
    "int": _filter_int,
    "float": _filter_float,
    "round": _filter_round,
    "abs": abs,
    "string": str,
    "list": list,
    "sum": lambda v, start=0: sum(v, start),
    "min": min,
    "max": max,
    "striptags": lambda v: re.sub(r"\s+", " ", re.sub(r"<[^>]*>", "", str(v))).strip(),
    "center": lambda v, width=80: str(v).center(width),
}


# --- environment and templates ---------------------------------------------------------------------


class Template:
    def __init__(self, env: Environment, nodes: list[Node], name: str | None) -> None:
        self.env = env
        self.nodes = nodes
        self.name = name

    def render(self, variables: dict[str, Any] | None = None, /, **kwargs: Any) -> str:
        ctx = Context(self.env, {**(variables or {}), **kwargs})
        out: list[str] = []
        self.render_into(ctx, out)
        return "".join(out)

    def render_into(self, ctx: Context, out: list[str]) -> None:
        render_nodes(self.nodes, ctx, out)


class Environment:
    """Holds settings, filters, globals and named templates (an in-memory loader)."""

    def __init__(
        self,
        templates: dict[str, str] | None = None,
        *,
        autoescape: bool = False,
        undefined: type[Undefined] = Undefined,
    ) -> None:
        self.templates = dict(templates or {})
        self.autoescape = autoescape
        self.undefined = undefined
        self.filters: dict[str, Callable[..., Any]] = dict(DEFAULT_FILTERS)
        self.globals: dict[str, Any] = {"range": range, "dict": dict, "zip": zip, "enumerate": enumerate}
        self._cache: dict[str, Template] = {}
        self._loading: list[str] = []

    def from_string(self, source: str, name: str | None = None) -> Template:
        nodes = Parser(tokenize(source, name), name).parse()
        return Template(self, nodes, name)

    def get_template(self, name: str) -> Template:
        if name in self._cache:
            return self._cache[name]
        if name not in self.templates:
            raise TemplateNotFound(name)
        if name in self._loading:
            raise TemplateError(f"recursive include of {name!r}")
        self._loading.append(name)
        try:
            template = self.from_string(self.templates[name], name)
        finally:
            self._loading.pop()
        self._cache[name] = template
        return template

    def add_template(self, name: str, source: str) -> None:
        self.templates[name] = source
        self._cache.pop(name, None)

    def render(self, source: str, **variables: Any) -> str:
        """Shortcut: compile `source` and render it once."""
        return self.from_string(source).render(**variables)
