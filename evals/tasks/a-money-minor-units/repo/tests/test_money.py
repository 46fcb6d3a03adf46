from decimal import Decimal

import pytest

from cashbox import (
    CurrencyMismatch,
    ExchangeRates,
    Money,
    MoneyError,
    UnknownCurrency,
    add_tax,
    cash_round,
    extract_tax,
    format_money,
    from_dict,
    parse_money,
    to_dict,
    total,
)


def test_rounds_to_currency_exponent():
    assert Money("19.999", "USD").amount == Decimal("20.00")
    assert Money("1234.5", "JPY").amount == Decimal("1235")
    assert Money("1.2345", "KWD").amount == Decimal("1.235")


def test_rejects_floats_and_unknown_currency():
    with pytest.raises(TypeError):
        Money(0.1, "USD")
    with pytest.raises(UnknownCurrency):
        Money("1", "XXX")


def test_arithmetic_and_mismatch():
    a, b = Money("10.10", "USD"), Money("0.25", "USD")
    assert a + b == Money("10.35", "USD")
    assert a - b == Money("9.85", "USD")
    assert a * 3 == Money("30.30", "USD")
    assert a / 4 == Money("2.53", "USD")
    assert sum([a, b]) == Money("10.35", "USD")
    with pytest.raises(CurrencyMismatch):
        a + Money("1", "EUR")


def test_minor_units_in_cents():
    assert Money("19.99", "USD").minor_units == 1999
    assert Money.from_minor(1999, "USD") == Money("19.99", "USD")


def test_minor_units_follow_currency_exponent():
    assert Money("1234", "JPY").minor_units == 1234
    assert Money("1.234", "KWD").minor_units == 1234
    assert Money.from_minor(500, "JPY") == Money("500", "JPY")
    assert Money.from_minor(1500, "BHD") == Money("1.5", "BHD")


def test_allocate_cents():
    parts = Money("100", "USD").allocate([1, 1, 1])
    assert [str(p) for p in parts] == ["33.34 USD", "33.33 USD", "33.33 USD"]
    assert total(parts) == Money("100", "USD")


def test_allocate_zero_decimal_currency():
    parts = Money("100", "JPY").allocate([1, 1, 1])
    assert [p.amount for p in parts] == [Decimal("34"), Decimal("33"), Decimal("33")]
    assert total(parts) == Money("100", "JPY")


def test_allocate_negative_and_ratios():
    parts = Money("-10", "EUR").allocate([3, 1])
    assert parts == [Money("-7.50", "EUR"), Money("-2.50", "EUR")]
    with pytest.raises(ValueError):
        Money("1", "EUR").allocate([0, 0])


def test_format_locales():
    assert format_money(Money("1234.5", "USD")) == "$1,234.50"
    assert format_money(Money("1234.5", "EUR"), "de_DE") == "1.234,50 €"
    assert format_money(Money("1234567", "INR"), "en_IN") == "₹12,34,567.00"
    assert format_money(Money("-5", "USD"), "accounting") == "($5.00)"
    assert format_money(Money("1234", "JPY")) == "¥1,234"
    assert f"{Money('3', 'GBP'):en_GB}" == "£3.00"


def test_parse_money():
    assert parse_money("$1,234.56") == Money("1234.56", "USD")
    assert parse_money("1.234,56 €") == Money("1234.56", "EUR")
    assert parse_money("-¥500") == Money("-500", "JPY")
    assert parse_money("USD 12.00") == Money("12", "USD")
    assert parse_money("(45.00) EUR") == Money("-45", "EUR")
    assert parse_money("7.5", default_currency="GBP") == Money("7.50", "GBP")
    with pytest.raises(MoneyError):
        parse_money("12.00")


def test_taxes_and_cash_rounding():
    breakdown = add_tax(Money("100", "EUR"), "19")
    assert breakdown.gross == Money("119", "EUR")
    inclusive = extract_tax(Money("10", "EUR"), "19")
    assert inclusive.net == Money("8.40", "EUR") and inclusive.tax == Money("1.60", "EUR")
    assert cash_round(Money("1.23", "CHF")) == Money("1.25", "CHF")


def test_serialization_round_trip():
    price = Money("19.99", "USD")
    assert from_dict(to_dict(price)) == price
    assert from_dict({"minor_units": 1999, "currency": "USD"}) == price
    with pytest.raises(MoneyError):
        from_dict({"amount": "1.005", "currency": "USD"})


def test_serialization_minor_units_zero_decimal():
    assert from_dict({"minor_units": 1500, "currency": "JPY"}) == Money("1500", "JPY")


def test_exchange_rates():
    rates = ExchangeRates("USD", {"EUR": "0.9", "JPY": "150"})
    assert rates.convert(Money("10", "USD"), "EUR") == Money("9", "EUR")
    assert rates.convert(Money("9", "EUR"), "JPY") == Money("1500", "JPY")
    assert rates.total_in([Money("1", "USD"), Money("0.9", "EUR")], "USD") == Money("2", "USD")
    with pytest.raises(MoneyError):
        rates.rate("USD", "GBP")
