from decimal import Decimal as D

import pytest

from cartprice import allocate, format_money, quantize
from cartprice.money import MoneyError, to_decimal


def test_quantize_rounds_half_up():
    assert quantize(D("0.125")) == D("0.13")
    assert quantize(D("2.675")) == D("2.68")
    assert quantize(D("-0.005")) == D("-0.01")


def test_quantize_uses_the_currency_minor_unit():
    assert quantize(D("2.675"), "EUR") == D("2.68")
    assert quantize(D("1.0005"), "BHD") == D("1.001")
    assert quantize(D("748.5"), "JPY") == D("749")
    assert quantize(D("204.8"), "JPY") == D("205")


def test_allocate_adds_up():
    assert allocate(D("10.00"), [D(1), D(1), D(1)], "EUR") == [D("3.34"), D("3.33"), D("3.33")]
    parts = allocate(D("5.00"), [D(25), D(6)], "EUR")
    assert parts == [D("4.03"), D("0.97")] and sum(parts) == D("5.00")
    assert allocate(D("100"), [D(1), D(2)], "JPY") == [D(33), D(67)]
    assert allocate(D("1.00"), [D(0), D(0)], "EUR") == [D("0.50"), D("0.50")]


def test_format_money():
    assert format_money(D("1234.5"), "EUR") == "€1,234.50"
    assert format_money(D("-3"), "USD") == "-$3.00"
    assert format_money(D("8310"), "JPY") == "¥8,310"
    assert format_money(D("2"), "SEK") == "SEK 2.00"


def test_floats_are_refused():
    with pytest.raises(MoneyError):
        to_decimal(0.1)
