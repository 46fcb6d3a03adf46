import math

import pytest

from exprcalc import (
    Calculator,
    EvalError,
    LexError,
    ParseError,
    UndefinedName,
    compile_expression,
    derivative,
    evaluate_source,
    parse,
    simplify,
    to_latex,
    to_string,
    tokenize,
)
from exprcalc.engine import equivalent, find_root, integrate, taylor


def test_tokenize():
    kinds = [(t.kind, t.text) for t in tokenize("x**2 >= 1_000 # comment")]
    assert kinds == [("name", "x"), ("op", "^"), ("number", "2"), ("op", ">="), ("number", "1_000"), ("end", "")]
    assert tokenize("0x1F")[0].value == 31
    with pytest.raises(LexError):
        tokenize("2 $ 3")


def test_precedence():
    assert evaluate_source("2 + 3 * 4") == 14
    assert evaluate_source("(2 + 3) * 4") == 20
    assert evaluate_source("2 * 3 ^ 2") == 18


def test_power_is_right_associative():
    assert evaluate_source("2 ^ 3 ^ 2") == 512
    assert evaluate_source("-2 ^ 2") == -4
    assert evaluate_source("2 ^ -1") == 0.5


def test_subtraction_is_left_associative():
    assert evaluate_source("10 - 4 - 3") == 3
    assert evaluate_source("1 - 2 + 3") == 2
    assert evaluate_source("x - y - z", {"x": 1, "y": 2, "z": 3}) == -4


def test_division_is_left_associative():
    assert evaluate_source("8 / 4 / 2") == 1
    assert evaluate_source("100 / 10 * 2") == 20
    assert evaluate_source("17 % 5 * 2") == 4


def test_printer_keeps_needed_parentheses():
    assert to_string(parse("a - (b - c)")) == "a - (b - c)"
    assert to_string(parse("(a + b) * c")) == "(a + b) * c"
    assert to_string(parse("(2 ^ 3) ^ 2")) == "(2 ^ 3) ^ 2"
    assert to_string(parse("(-2) ^ 2")) == "(-2) ^ 2"


def test_printer_round_trip_of_chains():
    assert to_string(parse("a - b - c")) == "a - b - c"
    assert to_string(parse("a / b * c")) == "a / b * c"


def test_logic_and_conditionals():
    assert evaluate_source("x > 1 && x < 5 ? 10 : 20", {"x": 3}) == 10
    assert evaluate_source("!(1 == 2) || 0") == 1
    assert evaluate_source("4!") == 24
    with pytest.raises(ParseError):
        parse("1 < 2 < 3")


def test_errors():
    with pytest.raises(ParseError) as info:
        parse("2 + * 3")
    assert info.value.position == 4
    assert "^" in str(info.value)
    with pytest.raises(UndefinedName):
        evaluate_source("y + 1")
    with pytest.raises(EvalError):
        evaluate_source("1 / 0")
    with pytest.raises(EvalError):
        evaluate_source("sqrt(1, 2)")


def test_calculator_session():
    calc = Calculator()
    calc.run("rate = 0.25")
    calc.run("tax(x) = x * rate")
    assert calc.run("tax(200)") == 50
    assert calc.run("ans + 1") == 51
    assert calc.functions() == ["tax(x) = x * rate"]
    assert calc.run_script("a = 2\nb = a ^ 10\n# done\nb + a") == [2, 1024, 1026]


def test_simplify_and_derivative():
    assert to_string(simplify(parse("0 + x * 1 + 2 * 3"))) == "x + 6"
    assert to_string(derivative(parse("x^3 + sin(x)"), "x")) == "3 * x ^ 2 + cos(x)"
    assert to_string(derivative(parse("exp(2 * x)"), "x")) == "2 * exp(2 * x)"


def test_compile_and_numeric_helpers():
    f = compile_expression("x^2 + 1", ["x"])
    assert f(3) == 10
    with pytest.raises(UndefinedName):
        compile_expression("x + y", ["x"])
    assert find_root("x^2 + -2", "x", 0, 2) == pytest.approx(math.sqrt(2))
    assert integrate("x^2", "x", 0, 3) == pytest.approx(9)
    assert equivalent("(x + 1)^2", "x^2 + 2*x + 1")


def test_latex_and_taylor():
    assert to_latex(parse("(a + b) / 2 * sqrt(x)")) == r"\frac{a + b}{2} \cdot \sqrt{x}"
    assert to_string(taylor("exp(x)", "x", 0, 2)) == "1.0 + x + 0.5 * x ^ 2"
