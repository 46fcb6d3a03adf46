"""A small expression language: tokenizer, parser, evaluator, printer, simplifier and derivatives.

    >>> calc = Calculator()
    >>> calc.run("f(x) = x^2 + 2*x")
    >>> calc.run("f(3) - 1")
    14
    >>> to_string(derivative(parse("x^3 - sin(x)"), "x"))
    '3 * x ^ 2 - cos(x)'

Grammar (lowest to highest precedence):

    statement   := NAME "=" expr | NAME "(" params ")" "=" expr | expr
    expr        := or ("?" expr ":" expr)?
    or          := and ("||" and)*
    and         := not ("&&" not)*
    not         := "!" not | comparison
    comparison  := additive (("==" | "!=" | "<" | "<=" | ">" | ">=") additive)?
    additive    := multiplicative (("+" | "-") multiplicative)*
    multiplicative := unary (("*" | "/" | "//" | "%") unary)*
    unary       := ("-" | "+") unary | power
    power       := postfix ("^" unary)?            right-associative: 2^3^2 = 2^9
    postfix     := primary "!"*                     factorial
    primary     := NUMBER | NAME | NAME "(" args ")" | "(" expr ")"

Binary operators other than "^" are left-associative: 10 - 4 - 3 = 3 and 8 / 4 / 2 = 1.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence, Union

# -- errors -------------------------------------------------------------------------------------------


class CalcError(Exception):
    """Base class for all errors of the expression language."""


class SourceError(CalcError):
    """An error at a position of the source text; `str()` shows the line with a caret under the spot."""

    def __init__(self, message: str, source: str, position: int):
        self.message = message
        self.source = source
        self.position = position
        super().__init__(message)

    def __str__(self) -> str:
        return f"{self.message} at column {self.position + 1}\n  {self.source}\n  {' ' * self.position}^"


class LexError(SourceError):
    pass


class ParseError(SourceError):
    pass


class EvalError(CalcError):
    """A well-formed expression that cannot be evaluated (division by zero, domain error, ...)."""


class UndefinedName(EvalError):
    def __init__(self, name: str):
        self.name = name
        super().__init__(f"undefined name {name!r}")


# -- tokens -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    kind: str  # "number", "name", "op", "end"
    text: str
    position: int
    value: float | int | None = None

    def __repr__(self) -> str:
        return f"Token({self.kind}, {self.text!r}, {self.position})"


_NUMBER = re.compile(
    r"0[xX][0-9a-fA-F_]+|0[bB][01_]+|(?:\d[\d_]*)?\.?\d[\d_]*(?:[eE][+-]?\d+)?"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*'?")
# Longest operators first so "**" is not read as two "*".
_OPERATORS = ["**", "//", "==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "^", "(", ")",
              ",", "=", "<", ">", "!", "?", ":"]


def _number_value(text: str) -> int | float:
    clean = text.replace("_", "")
    if clean[:2].lower() == "0x":
        return int(clean, 16)
    if clean[:2].lower() == "0b":
        return int(clean, 2)
    if re.fullmatch(r"\d+", clean):
        return int(clean)
    return float(clean)


def tokenize(source: str) -> list[Token]:
    """Split source text into tokens; '**' is read as '^'. Ends with an "end" token."""
    tokens: list[Token] = []
    index = 0
    length = len(source)
    while index < length:
        char = source[index]
        if char.isspace():
            index += 1
            continue
        if char == "#":
            break  # comment to end of line
        if char.isdigit() or (char == "." and index + 1 < length and source[index + 1].isdigit()):
            match = _NUMBER.match(source, index)
            text = match.group(0)
            if text.endswith("_") or "__" in text:
                raise LexError(f"malformed number {text!r}", source, index)
            try:
                value = _number_value(text)
            except ValueError:
                raise LexError(f"malformed number {text!r}", source, index) from None
            tokens.append(Token("number", text, index, value))
            index = match.end()
            if index < length and (source[index].isalpha() or source[index] == "_"):
                raise LexError("a number cannot run into a name", source, index)
            continue
        match = _NAME.match(source, index)
        if match:
            tokens.append(Token("name", match.group(0), index))
            index = match.end()
            continue
        for op in _OPERATORS:
            if source.startswith(op, index):
                tokens.append(Token("op", "^" if op == "**" else op, index))
                index += len(op)
                break
        else:
            raise LexError(f"unexpected character {char!r}", source, index)
    tokens.append(Token("end", "", length))
    return tokens


# -- syntax tree --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    value: int | float


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Unary:
    op: str  # "-", "+", "!" (logical not), "fact" (postfix factorial)
    operand: Node


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]


@dataclass(frozen=True)
class Conditional:
    condition: Node
    then: Node
    otherwise: Node


@dataclass(frozen=True)
class Assign:
    name: str
    value: Node


@dataclass(frozen=True)
class FunctionDef:
    name: str
    params: tuple[str, ...]
    body: Node


Node = Union[Number, Name, Unary, Binary, Call, Conditional]
Statement = Union[Node, Assign, FunctionDef]

COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
# Binding power used by the printer; higher binds tighter.
PRECEDENCE = {
    "?": 1, "||": 2, "&&": 3, "!": 4,
    "==": 5, "!=": 5, "<": 5, "<=": 5, ">": 5, ">=": 5,
    "+": 6, "-": 6, "*": 7, "/": 7, "//": 7, "%": 7,
    "neg": 8, "^": 9, "fact": 10,
}
RIGHT_ASSOCIATIVE = {"^"}


# -- built-in functions and constants -----------------------------------------------------------------

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


def _log(x, base=None):
    if base is None:
        return math.log10(x)
    return math.log(x, base)


def _round(x, digits=0):
    result = round(x, int(digits))
    return int(result) if digits == 0 else result


def _factorial(x):
    if x != int(x) or x < 0:
        raise EvalError(f"factorial needs a non-negative integer, got {x}")
    return math.factorial(int(x))


@dataclass(frozen=True)
class Builtin:
    function: Callable
    min_args: int
    max_args: int | None  # None: any number


FUNCTIONS: dict[str, Builtin] = {
    "sin": Builtin(math.sin, 1, 1),
    "cos": Builtin(math.cos, 1, 1),
    "tan": Builtin(math.tan, 1, 1),
    "asin": Builtin(math.asin, 1, 1),
    "acos": Builtin(math.acos, 1, 1),
    "atan": Builtin(math.atan, 1, 1),
    "atan2": Builtin(math.atan2, 2, 2),
    "sinh": Builtin(math.sinh, 1, 1),
    "cosh": Builtin(math.cosh, 1, 1),
    "tanh": Builtin(math.tanh, 1, 1),
    "sqrt": Builtin(math.sqrt, 1, 1),
    "cbrt": Builtin(lambda x: math.copysign(abs(x) ** (1 / 3), x), 1, 1),
    "exp": Builtin(math.exp, 1, 1),
    "ln": Builtin(math.log, 1, 1),
    "log": Builtin(_log, 1, 2),
    "log2": Builtin(math.log2, 1, 1),
    "abs": Builtin(abs, 1, 1),
    "floor": Builtin(math.floor, 1, 1),
    "ceil": Builtin(math.ceil, 1, 1),
    "round": Builtin(_round, 1, 2),
    "min": Builtin(min, 1, None),
    "max": Builtin(max, 1, None),
    "sum": Builtin(lambda *xs: sum(xs), 0, None),
    "avg": Builtin(lambda *xs: sum(xs) / len(xs), 1, None),
    "hypot": Builtin(math.hypot, 0, None),
    "gcd": Builtin(lambda a, b: math.gcd(int(a), int(b)), 2, 2),
    "fact": Builtin(_factorial, 1, 1),
    "deg": Builtin(math.degrees, 1, 1),
    "rad": Builtin(math.radians, 1, 1),
}


# -- parser -------------------------------------------------------------------------------------------


class Parser:
    """Recursive-descent parser over the token list; one method per grammar rule."""

    def __init__(self, source: str):
        self.source = source
        self.tokens = tokenize(source)
        self.index = 0

    # token helpers

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def _advance(self) -> Token:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def _peek_op(self, *ops: str) -> bool:
        token = self.current
        return token.kind == "op" and token.text in ops

    def _expect_op(self, op: str, context: str) -> Token:
        if not self._peek_op(op):
            found = self.current.text or "end of input"
            raise ParseError(f"expected {op!r} {context}, found {found!r}", self.source, self.current.position)
        return self._advance()

    def _error(self, message: str, token: Token | None = None) -> ParseError:
        token = token or self.current
        return ParseError(message, self.source, token.position)

    # entry points

    def parse_statement(self) -> Statement:
        statement = self._statement()
        if self.current.kind != "end":
            raise self._error(f"unexpected {self.current.text!r} after the end of the expression")
        return statement

    def parse_expression(self) -> Node:
        node = self._expr()
        if self.current.kind != "end":
            raise self._error(f"unexpected {self.current.text!r} after the end of the expression")
        return node

    # rules

    def _statement(self) -> Statement:
        if self.current.kind == "name":
            following = self.tokens[self.index + 1]
            if following.kind == "op" and following.text == "=":
                name = self._advance().text
                self._advance()
                if name in CONSTANTS:
                    raise self._error(f"cannot assign to the constant {name!r}")
                return Assign(name, self._expr())
            definition = self._try_function_definition()
            if definition is not None:
                return definition
        return self._expr()

    def _try_function_definition(self) -> FunctionDef | None:
        """Parse `f(x, y) = body` if the tokens have that shape, else rewind and return None."""
        start = self.index
        name = self._advance().text
        if not self._peek_op("("):
            self.index = start
            return None
        self._advance()
        params: list[str] = []
        while self.current.kind == "name":
            params.append(self._advance().text)
            if not self._peek_op(","):
                break
            self._advance()
        if not self._peek_op(")") or self.tokens[self.index + 1].text != "=" \
                or self.tokens[self.index + 1].kind != "op":
            self.index = start
            return None
        self._advance()
        self._advance()
        if len(set(params)) != len(params):
            raise self._error(f"duplicate parameter names in definition of {name!r}")
        return FunctionDef(name, tuple(params), self._expr())

    def _expr(self) -> Node:
        condition = self._or()
        if self._peek_op("?"):
            self._advance()
            then = self._expr()
            self._expect_op(":", "in a conditional expression")
            otherwise = self._expr()
            return Conditional(condition, then, otherwise)
        return condition

    def _or(self) -> Node:
        node = self._and()
        while self._peek_op("||"):
            self._advance()
            node = Binary("||", node, self._and())
        return node

    def _and(self) -> Node:
        node = self._not()
        while self._peek_op("&&"):
            self._advance()
            node = Binary("&&", node, self._not())
        return node

    def _not(self) -> Node:
        if self._peek_op("!"):
            self._advance()
            return Unary("!", self._not())
        return self._comparison()

    def _comparison(self) -> Node:
        node = self._additive()
        if self._peek_op(*COMPARISONS):
            op = self._advance().text
            node = Binary(op, node, self._additive())
            if self._peek_op(*COMPARISONS):
                raise self._error("comparisons cannot be chained; use && to combine them")
        return node

    def _additive(self) -> Node:
        """Sums and differences; operands are products, so 1 + 2 * 3 groups the product first."""
        node = self._multiplicative()
        if self._peek_op("+", "-"):
            op = self._advance().text
            right = self._additive()
            node = Binary(op, node, right)
        return node

    def _multiplicative(self) -> Node:
        """Products, quotients, floor division and remainders.

        Operands go through _unary, so 2 * -3 works and -2 ^ 2 keeps the power binding tighter.
        """
        node = self._unary()
        if self._peek_op("*", "/", "//", "%"):
            op = self._advance().text
            right = self._multiplicative()
            node = Binary(op, node, right)
        return node

    def _unary(self) -> Node:
        if self._peek_op("-", "+"):
            op = self._advance().text
            operand = self._unary()
            if op == "+":
                return operand
            if isinstance(operand, Number):
                return Number(-operand.value)
            return Unary("-", operand)
        return self._power()

    def _power(self) -> Node:
        base = self._postfix()
        if self._peek_op("^"):
            self._advance()
            # Right-associative, and the exponent may carry its own sign: 2^-1, 2^3^2 = 2^(3^2).
            return Binary("^", base, self._unary())
        return base

    def _postfix(self) -> Node:
        node = self._primary()
        while self._peek_op("!"):
            # "!" directly after an operand is factorial; "!=" was already tokenized separately.
            self._advance()
            node = Unary("fact", node)
        return node

    def _primary(self) -> Node:
        token = self.current
        if token.kind == "number":
            self._advance()
            return Number(token.value)
        if token.kind == "name":
            self._advance()
            if self._peek_op("("):
                return self._call(token)
            return Name(token.text)
        if self._peek_op("("):
            self._advance()
            node = self._expr()
            self._expect_op(")", "to close the parenthesis")
            return node
        if token.kind == "end":
            raise self._error("unexpected end of input")
        raise self._error(f"unexpected {token.text!r}")

    def _call(self, name: Token) -> Call:
        self._advance()  # "("
        args: list[Node] = []
        if not self._peek_op(")"):
            while True:
                args.append(self._expr())
                if self._peek_op(","):
                    self._advance()
                    continue
                break
        self._expect_op(")", f"after the arguments of {name.text}()")
        return Call(name.text, tuple(args))


def parse(source: str) -> Node:
    """Parse an expression (no assignments)."""
    return Parser(source).parse_expression()


def parse_statement(source: str) -> Statement:
    """Parse an expression, an assignment `x = ...` or a definition `f(x) = ...`."""
    return Parser(source).parse_statement()


# -- evaluation ---------------------------------------------------------------------------------------


@dataclass
class UserFunction:
    name: str
    params: tuple[str, ...]
    body: Node

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.params)}) = {to_string(self.body)}"


@dataclass
class Environment:
    """Variables and user functions; lookups fall back to `parent`, then to constants and builtins."""

    variables: dict[str, float] = field(default_factory=dict)
    functions: dict[str, UserFunction] = field(default_factory=dict)
    parent: Environment | None = None

    def lookup(self, name: str):
        env: Environment | None = self
        while env is not None:
            if name in env.variables:
                return env.variables[name]
            env = env.parent
        if name in CONSTANTS:
            return CONSTANTS[name]
        raise UndefinedName(name)

    def lookup_function(self, name: str) -> UserFunction | Builtin:
        env: Environment | None = self
        while env is not None:
            if name in env.functions:
                return env.functions[name]
            env = env.parent
        if name in FUNCTIONS:
            return FUNCTIONS[name]
        raise UndefinedName(name)

    def child(self, variables: Mapping[str, float]) -> Environment:
        return Environment(variables=dict(variables), parent=self)


MAX_CALL_DEPTH = 200


def _divide(left, right, op: str):
    if right == 0:
        raise EvalError("division by zero")
    if op == "/":
        result = left / right
        return int(result) if isinstance(left, int) and isinstance(right, int) and left % right == 0 \
            else result
    if op == "//":
        return left // right
    return left % right


def _power(base, exponent):
    if base == 0 and exponent < 0:
        raise EvalError("zero cannot be raised to a negative power")
    result = base ** exponent
    if isinstance(result, complex):
        raise EvalError(f"{base} ^ {exponent} is not a real number")
    return result


def _truthy(value) -> bool:
    return value != 0


def evaluate(node: Statement, env: Environment | None = None, _depth: int = 0):
    """Evaluate a node (or statement) in `env`; comparisons and logic give 1 or 0."""
    env = env if env is not None else Environment()
    if _depth > MAX_CALL_DEPTH:
        raise EvalError("maximum recursion depth exceeded")
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Name):
        return env.lookup(node.name)
    if isinstance(node, Unary):
        value = evaluate(node.operand, env, _depth)
        if node.op == "-":
            return -value
        if node.op == "!":
            return 0 if _truthy(value) else 1
        if node.op == "fact":
            return _factorial(value)
        return value
    if isinstance(node, Binary):
        return _evaluate_binary(node, env, _depth)
    if isinstance(node, Conditional):
        branch = node.then if _truthy(evaluate(node.condition, env, _depth)) else node.otherwise
        return evaluate(branch, env, _depth)
    if isinstance(node, Call):
        return _evaluate_call(node, env, _depth)
    if isinstance(node, Assign):
        value = evaluate(node.value, env, _depth)
        env.variables[node.name] = value
        return value
    if isinstance(node, FunctionDef):
        if node.name in FUNCTIONS:
            raise EvalError(f"cannot redefine the built-in function {node.name!r}")
        env.functions[node.name] = UserFunction(node.name, node.params, node.body)
        return None
    raise TypeError(f"not an expression node: {node!r}")


def _evaluate_binary(node: Binary, env: Environment, depth: int):
    op = node.op
    if op == "&&":
        return 1 if _truthy(evaluate(node.left, env, depth)) and _truthy(evaluate(node.right, env, depth)) else 0
    if op == "||":
        return 1 if _truthy(evaluate(node.left, env, depth)) or _truthy(evaluate(node.right, env, depth)) else 0
    left = evaluate(node.left, env, depth)
    right = evaluate(node.right, env, depth)
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if op in ("/", "//", "%"):
        return _divide(left, right, op)
    if op == "^":
        return _power(left, right)
    if op in COMPARISONS:
        return int({
            "==": left == right, "!=": left != right, "<": left < right,
            "<=": left <= right, ">": left > right, ">=": left >= right,
        }[op])
    raise EvalError(f"unknown operator {op!r}")


def _evaluate_call(node: Call, env: Environment, depth: int):
    target = env.lookup_function(node.function)
    args = [evaluate(arg, env, depth) for arg in node.args]
    if isinstance(target, UserFunction):
        if len(args) != len(target.params):
            raise EvalError(f"{target.name}() takes {len(target.params)} argument(s), got {len(args)}")
        return evaluate(target.body, env.child(dict(zip(target.params, args))), depth + 1)
    if len(args) < target.min_args or (target.max_args is not None and len(args) > target.max_args):
        expected = str(target.min_args) if target.min_args == target.max_args else \
            f"{target.min_args}..{target.max_args if target.max_args is not None else 'n'}"
        raise EvalError(f"{node.function}() takes {expected} argument(s), got {len(args)}")
    try:
        return target.function(*args)
    except (ValueError, OverflowError) as exc:
        raise EvalError(f"{node.function}({', '.join(map(str, args))}): {exc}") from None
    except ZeroDivisionError:
        raise EvalError(f"{node.function}(): division by zero") from None


def evaluate_source(source: str, variables: Mapping[str, float] | None = None):
    """Parse and evaluate one expression with the given variables."""
    env = Environment(variables=dict(variables or {}))
    return evaluate(parse(source), env)


# -- printing -----------------------------------------------------------------------------------------


def _node_precedence(node: Node) -> int:
    if isinstance(node, Binary):
        return PRECEDENCE[node.op]
    if isinstance(node, Conditional):
        return PRECEDENCE["?"]
    if isinstance(node, Unary):
        return PRECEDENCE["fact"] if node.op == "fact" else PRECEDENCE["!" if node.op == "!" else "neg"]
    if isinstance(node, Number) and node.value < 0:
        return PRECEDENCE["neg"]
    return 100


def _format_number(value: int | float) -> str:
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value)) + ".0"
        return repr(value)
    return str(value)


def to_string(node: Statement) -> str:
    """Source text for a node, with only the parentheses that the grammar needs."""
    if isinstance(node, Assign):
        return f"{node.name} = {to_string(node.value)}"
    if isinstance(node, FunctionDef):
        return f"{node.name}({', '.join(node.params)}) = {to_string(node.body)}"
    if isinstance(node, Number):
        return _format_number(node.value)
    if isinstance(node, Name):
        return node.name
    if isinstance(node, Call):
        return f"{node.function}({', '.join(to_string(a) for a in node.args)})"
    if isinstance(node, Conditional):
        condition = _wrap(node.condition, PRECEDENCE["?"] + 1)
        return f"{condition} ? {to_string(node.then)} : {to_string(node.otherwise)}"
    if isinstance(node, Unary):
        if node.op == "fact":
            return f"{_wrap(node.operand, PRECEDENCE['fact'])}!"
        symbol = "!" if node.op == "!" else "-"
        own = PRECEDENCE["!"] if node.op == "!" else PRECEDENCE["neg"]
        return f"{symbol}{_wrap(node.operand, own)}"
    if isinstance(node, Binary):
        own = PRECEDENCE[node.op]
        if node.op in RIGHT_ASSOCIATIVE:
            left_min, right_min = own + 1, own
        else:
            left_min, right_min = own, own + 1
        # A negative number as the base of a power needs parentheses: (-2) ^ 2 vs -2 ^ 2.
        if node.op == "^" and isinstance(node.left, (Unary, Number)) and _node_precedence(node.left) < 100:
            left_min = 100
        return f"{_wrap(node.left, left_min)} {node.op} {_wrap(node.right, right_min)}"
    raise TypeError(f"not an expression node: {node!r}")


def _wrap(node: Node, minimum: int) -> str:
    text = to_string(node)
    return f"({text})" if _node_precedence(node) < minimum else text


# -- analysis -----------------------------------------------------------------------------------------


def walk(node: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children."""
    yield node
    if isinstance(node, Unary):
        yield from walk(node.operand)
    elif isinstance(node, Binary):
        yield from walk(node.left)
        yield from walk(node.right)
    elif isinstance(node, Call):
        for arg in node.args:
            yield from walk(arg)
    elif isinstance(node, Conditional):
        yield from walk(node.condition)
        yield from walk(node.then)
        yield from walk(node.otherwise)


def free_variables(node: Node) -> set[str]:
    """Names an expression needs from its environment (constants excluded)."""
    return {n.name for n in walk(node) if isinstance(n, Name) and n.name not in CONSTANTS}


def functions_used(node: Node) -> set[str]:
    return {n.function for n in walk(node) if isinstance(n, Call)}


def substitute(node: Node, replacements: Mapping[str, Node]) -> Node:
    """Replace variables by sub-expressions (used for inlining user functions)."""
    if isinstance(node, Name):
        return replacements.get(node.name, node)
    if isinstance(node, Unary):
        return Unary(node.op, substitute(node.operand, replacements))
    if isinstance(node, Binary):
        return Binary(node.op, substitute(node.left, replacements), substitute(node.right, replacements))
    if isinstance(node, Call):
        return Call(node.function, tuple(substitute(a, replacements) for a in node.args))
    if isinstance(node, Conditional):
        return Conditional(substitute(node.condition, replacements), substitute(node.then, replacements),
                           substitute(node.otherwise, replacements))
    return node


def node_count(node: Node) -> int:
    return sum(1 for _ in walk(node))


# -- simplification -----------------------------------------------------------------------------------


def _is_number(node: Node, value: float | None = None) -> bool:
    return isinstance(node, Number) and (value is None or node.value == value)


def simplify(node: Node) -> Node:
    """Fold constants and apply algebraic identities (x + 0, x * 1, x * 0, x ^ 1, x ^ 0, --x, x - x).

    Pure functions of constants are folded too (sin(0) -> 0.0); division by zero is left unevaluated
    so the error appears when the expression is evaluated.
    """
    if isinstance(node, Unary):
        operand = simplify(node.operand)
        if node.op == "-":
            if isinstance(operand, Number):
                return Number(-operand.value)
            if isinstance(operand, Unary) and operand.op == "-":
                return operand.operand
        if node.op == "fact" and isinstance(operand, Number):
            try:
                return Number(_factorial(operand.value))
            except EvalError:
                pass
        return Unary(node.op, operand)
    if isinstance(node, Binary):
        return _simplify_binary(node.op, simplify(node.left), simplify(node.right))
    if isinstance(node, Call):
        args = tuple(simplify(a) for a in node.args)
        if node.function in FUNCTIONS and all(isinstance(a, Number) for a in args):
            try:
                return Number(_evaluate_call(Call(node.function, args), Environment(), 0))
            except EvalError:
                pass
        return Call(node.function, args)
    if isinstance(node, Conditional):
        condition = simplify(node.condition)
        if isinstance(condition, Number):
            return simplify(node.then if _truthy(condition.value) else node.otherwise)
        return Conditional(condition, simplify(node.then), simplify(node.otherwise))
    return node


def _simplify_binary(op: str, left: Node, right: Node) -> Node:
    if isinstance(left, Number) and isinstance(right, Number):
        try:
            return Number(_evaluate_binary(Binary(op, left, right), Environment(), 0))
        except EvalError:
            return Binary(op, left, right)
    if op == "+":
        if _is_number(left, 0):
            return right
        if _is_number(right, 0):
            return left
        if isinstance(right, Unary) and right.op == "-":
            return _simplify_binary("-", left, right.operand)
    if op == "-":
        if _is_number(right, 0):
            return left
        if _is_number(left, 0):
            return simplify(Unary("-", right))
        if left == right:
            return Number(0)
    if op == "*":
        if _is_number(left, 0) or _is_number(right, 0):
            return Number(0)
        if _is_number(left, 1):
            return right
        if _is_number(right, 1):
            return left
        if _is_number(left, -1):
            return simplify(Unary("-", right))
        if isinstance(right, Number) and not isinstance(left, Number):
            # Keep coefficients in front: x * 3 -> 3 * x.
            return Binary("*", right, left)
    if op == "/":
        if _is_number(right, 1):
            return left
        if _is_number(left, 0) and not _is_number(right, 0):
            return Number(0)
        if left == right and not isinstance(left, Number):
            return Number(1)
    if op == "^":
        if _is_number(right, 0):
            return Number(1)
        if _is_number(right, 1):
            return left
        if _is_number(left, 1):
            return Number(1)
    return Binary(op, left, right)


# -- derivatives --------------------------------------------------------------------------------------


def _d(node: Node, var: str) -> Node:
    """Unsimplified derivative of `node` with respect to `var`."""
    if isinstance(node, Number):
        return Number(0)
    if isinstance(node, Name):
        return Number(1 if node.name == var else 0)
    if isinstance(node, Unary):
        if node.op == "-":
            return Unary("-", _d(node.operand, var))
        raise CalcError(f"cannot differentiate the operator {node.op!r}")
    if isinstance(node, Binary):
        u, v = node.left, node.right
        if node.op in ("+", "-"):
            return Binary(node.op, _d(u, var), _d(v, var))
        if node.op == "*":
            return Binary("+", Binary("*", _d(u, var), v), Binary("*", u, _d(v, var)))
        if node.op == "/":
            numerator = Binary("-", Binary("*", _d(u, var), v), Binary("*", u, _d(v, var)))
            return Binary("/", numerator, Binary("^", v, Number(2)))
        if node.op == "^":
            if var not in free_variables(v):
                # Power rule: d(u^n) = n * u^(n-1) * u'
                exponent = simplify(Binary("-", v, Number(1)))
                return Binary("*", Binary("*", v, Binary("^", u, exponent)), _d(u, var))
            # General rule: d(u^v) = u^v * (v' * ln(u) + v * u' / u)
            return Binary("*", node, Binary("+", Binary("*", _d(v, var), Call("ln", (u,))),
                                             Binary("/", Binary("*", v, _d(u, var)), u)))
        raise CalcError(f"cannot differentiate the operator {node.op!r}")
    if isinstance(node, Call) and len(node.args) == 1:
        (u,) = node.args
        outer = _DERIVATIVES.get(node.function)
        if outer is None:
            raise CalcError(f"no derivative rule for {node.function}()")
        return Binary("*", outer(u), _d(u, var))
    raise CalcError(f"cannot differentiate {to_string(node)}")


_DERIVATIVES: dict[str, Callable[[Node], Node]] = {
    "sin": lambda u: Call("cos", (u,)),
    "cos": lambda u: Unary("-", Call("sin", (u,))),
    "tan": lambda u: Binary("/", Number(1), Binary("^", Call("cos", (u,)), Number(2))),
    "exp": lambda u: Call("exp", (u,)),
    "ln": lambda u: Binary("/", Number(1), u),
    "sqrt": lambda u: Binary("/", Number(1), Binary("*", Number(2), Call("sqrt", (u,)))),
    "sinh": lambda u: Call("cosh", (u,)),
    "cosh": lambda u: Call("sinh", (u,)),
}


def derivative(node: Node, var: str) -> Node:
    """Symbolic derivative d(node)/d(var), simplified."""
    return simplify(_d(node, var))


# -- compilation --------------------------------------------------------------------------------------


def compile_expression(source: str | Node, params: Sequence[str]) -> Callable[..., float]:
    """A Python function of `params` computing the expression, for fast repeated evaluation.

    Unknown free variables are reported now, not at call time.
    """
    node = parse(source) if isinstance(source, str) else source
    unknown = free_variables(node) - set(params)
    if unknown:
        raise UndefinedName(sorted(unknown)[0])
    code = _compile(node)

    def function(*args):
        if len(args) != len(params):
            raise TypeError(f"expected {len(params)} argument(s), got {len(args)}")
        return code(dict(zip(params, args)))

    function.__name__ = "compiled_expression"
    function.__doc__ = to_string(node)
    return function


def _compile(node: Node) -> Callable[[dict], float]:
    """A closure tree: each node becomes a function of the variable mapping."""
    if isinstance(node, Number):
        value = node.value
        return lambda scope: value
    if isinstance(node, Name):
        name = node.name
        if name in CONSTANTS:
            constant = CONSTANTS[name]
            return lambda scope: constant
        return lambda scope: scope[name]
    if isinstance(node, Unary):
        operand = _compile(node.operand)
        if node.op == "-":
            return lambda scope: -operand(scope)
        if node.op == "!":
            return lambda scope: 0 if _truthy(operand(scope)) else 1
        if node.op == "fact":
            return lambda scope: _factorial(operand(scope))
        return operand
    if isinstance(node, Binary):
        left, right, op = _compile(node.left), _compile(node.right), node.op
        return lambda scope: _evaluate_binary(Binary(op, Number(left(scope)), Number(right(scope))),
                                              Environment(), 0)
    if isinstance(node, Call):
        builtin = FUNCTIONS.get(node.function)
        if builtin is None:
            raise UndefinedName(node.function)
        args = [_compile(a) for a in node.args]
        call = Call(node.function, tuple(Number(0) for _ in args))
        return lambda scope: _evaluate_call(
            Call(call.function, tuple(Number(a(scope)) for a in args)), Environment(), 0)
    if isinstance(node, Conditional):
        condition, then, otherwise = (_compile(node.condition), _compile(node.then),
                                      _compile(node.otherwise))
        return lambda scope: then(scope) if _truthy(condition(scope)) else otherwise(scope)
    raise TypeError(f"not an expression node: {node!r}")


# -- other output formats ----------------------------------------------------------------------------

_LATEX_FUNCTIONS = {"sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "ln", "log", "min", "max",
                    "arcsin", "arccos", "arctan"}
_LATEX_NAMES = {"pi": r"\pi", "tau": r"\tau", "inf": r"\infty", "alpha": r"\alpha", "beta": r"\beta",
                "theta": r"\theta", "lambda": r"\lambda", "mu": r"\mu", "sigma": r"\sigma"}
_LATEX_OPS = {"==": "=", "!=": r"\neq", "<=": r"\leq", ">=": r"\geq", "<": "<", ">": ">",
              "&&": r"\land", "||": r"\lor", "%": r"\bmod"}


def to_latex(node: Node) -> str:
    """LaTeX for an expression: fractions for '/', superscripts for '^', \\sqrt, \\cdot."""
    if isinstance(node, Number):
        return _format_number(node.value)
    if isinstance(node, Name):
        return _LATEX_NAMES.get(node.name, node.name)
    if isinstance(node, Unary):
        if node.op == "fact":
            return f"{_latex_wrap(node.operand, PRECEDENCE['fact'])}!"
        if node.op == "!":
            return rf"\lnot {_latex_wrap(node.operand, PRECEDENCE['!'])}"
        return f"-{_latex_wrap(node.operand, PRECEDENCE['neg'])}"
    if isinstance(node, Call):
        args = ", ".join(to_latex(a) for a in node.args)
        if node.function == "sqrt":
            return rf"\sqrt{{{args}}}"
        if node.function == "abs":
            return rf"\left|{args}\right|"
        if node.function in _LATEX_FUNCTIONS:
            return rf"\{node.function}\left({args}\right)"
        return rf"\operatorname{{{node.function}}}\left({args}\right)"
    if isinstance(node, Conditional):
        return (rf"\begin{{cases}} {to_latex(node.then)} & \text{{if }} {to_latex(node.condition)} \\\\ "
                rf"{to_latex(node.otherwise)} & \text{{otherwise}} \end{{cases}}")
    if isinstance(node, Binary):
        if node.op == "/":
            return rf"\frac{{{to_latex(node.left)}}}{{{to_latex(node.right)}}}"
        if node.op == "^":
            return f"{_latex_wrap(node.left, PRECEDENCE['^'] + 1)}^{{{to_latex(node.right)}}}"
        own = PRECEDENCE[node.op]
        left = _latex_wrap(node.left, own)
        right = _latex_wrap(node.right, own + 1)
        if node.op == "*":
            return f"{left} \\cdot {right}"
        if node.op == "//":
            return rf"\left\lfloor \frac{{{to_latex(node.left)}}}{{{to_latex(node.right)}}} \right\rfloor"
        return f"{left} {_LATEX_OPS.get(node.op, node.op)} {right}"
    raise TypeError(f"not an expression node: {node!r}")


def _latex_wrap(node: Node, minimum: int) -> str:
    text = to_latex(node)
    return rf"\left({text}\right)" if _node_precedence(node) < minimum else text


_PYTHON_OPS = {"^": "**", "&&": "and", "||": "or"}


def to_python(node: Node) -> str:
    """Python source computing the expression (math.* functions, `x if c else y`)."""
    if isinstance(node, Number):
        return repr(node.value)
    if isinstance(node, Name):
        return f"math.{node.name}" if node.name in CONSTANTS else node.name
    if isinstance(node, Unary):
        if node.op == "fact":
            return f"math.factorial({to_python(node.operand)})"
        if node.op == "!":
            return f"(not {to_python(node.operand)})"
        return f"(-{to_python(node.operand)})"
    if isinstance(node, Binary):
        op = _PYTHON_OPS.get(node.op, node.op)
        return f"({to_python(node.left)} {op} {to_python(node.right)})"
    if isinstance(node, Call):
        args = ", ".join(to_python(a) for a in node.args)
        name = {"ln": "log", "log": "log10", "abs": "abs", "min": "min", "max": "max", "round": "round",
                "sum": "sum"}.get(node.function, node.function)
        if name in ("abs", "min", "max", "round"):
            return f"{name}({args})"
        return f"math.{name}({args})"
    if isinstance(node, Conditional):
        return f"({to_python(node.then)} if {to_python(node.condition)} else {to_python(node.otherwise)})"
    raise TypeError(f"not an expression node: {node!r}")


def dump(node: Node, indent: int = 0) -> str:
    """An indented tree view of a node, for debugging the parser."""
    pad = "  " * indent
    if isinstance(node, Number):
        return f"{pad}Number {node.value}"
    if isinstance(node, Name):
        return f"{pad}Name {node.name}"
    if isinstance(node, Unary):
        return f"{pad}Unary {node.op}\n{dump(node.operand, indent + 1)}"
    if isinstance(node, Binary):
        return f"{pad}Binary {node.op}\n{dump(node.left, indent + 1)}\n{dump(node.right, indent + 1)}"
    if isinstance(node, Call):
        lines = [f"{pad}Call {node.function}"] + [dump(a, indent + 1) for a in node.args]
        return "\n".join(lines)
    if isinstance(node, Conditional):
        parts = [dump(node.condition, indent + 1), dump(node.then, indent + 1), dump(node.otherwise, indent + 1)]
        return "\n".join([f"{pad}Conditional"] + parts)
    raise TypeError(f"not an expression node: {node!r}")


# -- numeric helpers built on expressions -------------------------------------------------------------


def tabulate(source: str, var: str, start: float, stop: float, steps: int) -> list[tuple[float, float]]:
    """(x, f(x)) pairs at `steps` + 1 evenly spaced points from start to stop."""
    if steps < 1:
        raise ValueError("steps must be at least 1")
    function = compile_expression(source, [var])
    width = (stop - start) / steps
    return [(start + i * width, function(start + i * width)) for i in range(steps + 1)]


def find_root(source: str, var: str, low: float, high: float, tolerance: float = 1e-12,
              max_iterations: int = 200) -> float:
    """A root of the expression in [low, high] by bisection; the ends must have opposite signs."""
    function = compile_expression(source, [var])
    f_low, f_high = function(low), function(high)
    if f_low == 0:
        return low
    if f_high == 0:
        return high
    if (f_low < 0) == (f_high < 0):
        raise EvalError(f"{source} has the same sign at {low} and {high}; no bracketed root")
    for _ in range(max_iterations):
        middle = (low + high) / 2
        f_middle = function(middle)
        if f_middle == 0 or (high - low) / 2 < tolerance:
            return middle
        if (f_middle < 0) == (f_low < 0):
            low, f_low = middle, f_middle
        else:
            high = middle
    return (low + high) / 2


def integrate(source: str, var: str, low: float, high: float, intervals: int = 1000) -> float:
    """Definite integral by composite Simpson's rule (`intervals` is rounded up to an even number)."""
    if intervals < 2:
        raise ValueError("intervals must be at least 2")
    intervals += intervals % 2
    function = compile_expression(source, [var])
    width = (high - low) / intervals
    total = function(low) + function(high)
    for i in range(1, intervals):
        total += (4 if i % 2 else 2) * function(low + i * width)
    return total * width / 3


# -- calculator session -------------------------------------------------------------------------------


@dataclass
class HistoryEntry:
    source: str
    result: object


class Calculator:
    """A stateful session: variables and functions persist between lines; `ans` is the last result."""

    def __init__(self, variables: Mapping[str, float] | None = None):
        self.env = Environment(variables=dict(variables or {}))
        self.history: list[HistoryEntry] = []

    def run(self, line: str):
        """Evaluate one line; returns the value (None for definitions and blank lines)."""
        if not line.strip() or line.strip().startswith("#"):
            return None
        statement = parse_statement(line)
        result = evaluate(statement, self.env)
        self.history.append(HistoryEntry(line, result))
        if result is not None and not isinstance(statement, FunctionDef):
            self.env.variables["ans"] = result
        return result

    def run_script(self, text: str) -> list:
        """Run several lines; returns the non-None results in order."""
        results = []
        for number, line in enumerate(text.splitlines(), start=1):
            try:
                value = self.run(line)
            except CalcError as exc:
                raise CalcError(f"line {number}: {exc}") from exc
            if value is not None:
                results.append(value)
        return results

    def define(self, name: str, value: float) -> None:
        if name in CONSTANTS:
            raise EvalError(f"cannot assign to the constant {name!r}")
        self.env.variables[name] = value

    @property
    def variables(self) -> dict[str, float]:
        return dict(self.env.variables)

    def functions(self) -> list[str]:
        """User functions, as their definitions."""
        return [str(f) for f in self.env.functions.values()]

    def inline(self, source: str) -> Node:
        """The expression with user-function calls replaced by their bodies (for printing or export)."""
        return self._inline(parse(source))

    def _inline(self, node: Node, depth: int = 0) -> Node:
        if depth > MAX_CALL_DEPTH:
            raise EvalError("recursive function cannot be inlined")
        if isinstance(node, Call):
            args = tuple(self._inline(a, depth) for a in node.args)
            target = self.env.functions.get(node.function)
            if target is None:
                return Call(node.function, args)
            if len(args) != len(target.params):
                raise EvalError(f"{target.name}() takes {len(target.params)} argument(s), got {len(args)}")
            body = substitute(target.body, dict(zip(target.params, args)))
            return self._inline(body, depth + 1)
        if isinstance(node, Unary):
            return Unary(node.op, self._inline(node.operand, depth))
        if isinstance(node, Binary):
            return Binary(node.op, self._inline(node.left, depth), self._inline(node.right, depth))
        if isinstance(node, Conditional):
            return Conditional(self._inline(node.condition, depth), self._inline(node.then, depth),
                               self._inline(node.otherwise, depth))
        return node


# -- series and equivalence ---------------------------------------------------------------------------


def taylor(source: str | Node, var: str, at: float = 0.0, order: int = 3) -> Node:
    """Taylor polynomial of the expression around `at`, up to x^order, as a simplified node."""
    if order < 0:
        raise ValueError("order must not be negative")
    node = parse(source) if isinstance(source, str) else source
    terms: list[Node] = []
    current = node
    for k in range(order + 1):
        coefficient = evaluate(current, Environment(variables={var: at})) / math.factorial(k)
        if coefficient != 0:
            shift = Name(var) if at == 0 else Binary("-", Name(var), Number(at))
            term = Binary("*", Number(coefficient), Binary("^", shift, Number(k)))
            terms.append(simplify(term))
        current = derivative(current, var)
    if not terms:
        return Number(0)
    result = terms[0]
    for term in terms[1:]:
        result = Binary("+", result, term)
    return simplify(result)


def equivalent(first: str | Node, second: str | Node, samples: Sequence[Mapping[str, float]] | None = None,
               tolerance: float = 1e-9) -> bool:
    """Whether two expressions agree numerically at sample points (a quick check, not a proof)."""
    a = parse(first) if isinstance(first, str) else first
    b = parse(second) if isinstance(second, str) else second
    names = sorted(free_variables(a) | free_variables(b))
    if samples is None:
        points = [0.5, 1.25, 2.0, -0.75, 3.5]
        samples = [{name: points[(i + j) % len(points)] for j, name in enumerate(names)} for i in range(5)]
    for sample in samples:
        try:
            x = evaluate(a, Environment(variables=dict(sample)))
            y = evaluate(b, Environment(variables=dict(sample)))
        except EvalError:
            continue
        if not math.isclose(x, y, rel_tol=tolerance, abs_tol=tolerance):
            return False
    return True


def newton(source: str, var: str, guess: float, tolerance: float = 1e-12, max_iterations: int = 50) -> float:
    """A root near `guess` by Newton's method, using the symbolic derivative."""
    node = parse(source)
    f = compile_expression(node, [var])
    df = compile_expression(derivative(node, var), [var])
    x = guess
    for _ in range(max_iterations):
        slope = df(x)
        if slope == 0:
            raise EvalError(f"derivative is zero at {x}; try another starting point")
        step = f(x) / slope
        x -= step
        if abs(step) < tolerance:
            return x
    raise EvalError(f"no convergence after {max_iterations} iterations")
