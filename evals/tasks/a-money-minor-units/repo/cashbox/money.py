"""Money: an exact decimal amount in one currency.

    >>> price = Money("19.99", "USD")
    >>> format_money(price * 3)
    '$59.97'
    >>> [str(m) for m in Money("100", "USD").allocate([1, 1, 1])]
    ['33.34 USD', '33.33 USD', '33.33 USD']

Amounts are rounded to the currency's number of decimal places (its exponent) when a Money is created,
so every Money maps to a whole number of minor units (cents, pence, yen, fils). Arithmetic between
different currencies raises CurrencyMismatch; conversion goes through ExchangeRates explicitly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Iterable, Mapping, Sequence

from .rounding import from_minor_units, round_amount, to_decimal, to_minor_units

# -- errors -------------------------------------------------------------------------------------------


class MoneyError(Exception):
    """Base class for errors raised by this package."""


class UnknownCurrency(MoneyError, KeyError):
    def __init__(self, code: str):
        self.code = code
        super().__init__(f"unknown currency code {code!r}")

    def __str__(self) -> str:
        return self.args[0]


class CurrencyMismatch(MoneyError, TypeError):
    def __init__(self, left: str, right: str, operation: str):
        super().__init__(f"cannot {operation} {left} and {right}; convert one of them first")


class ParseError(MoneyError, ValueError):
    """Text could not be read as an amount of money."""


# -- currencies ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Currency:
    """An ISO 4217 currency: `exponent` is the number of decimal places of its minor unit."""

    code: str
    exponent: int
    symbol: str
    name: str

    def __str__(self) -> str:
        return self.code


_CURRENCIES: dict[str, Currency] = {}


def register_currency(code: str, exponent: int, symbol: str, name: str) -> Currency:
    """Add (or replace) a currency, e.g. a loyalty-points "currency" with exponent 0."""
    if not re.fullmatch(r"[A-Z]{3}", code):
        raise ValueError(f"currency codes are three upper-case letters, got {code!r}")
    if not 0 <= exponent <= 8:
        raise ValueError(f"exponent must be between 0 and 8, got {exponent}")
    currency = Currency(code, exponent, symbol, name)
    _CURRENCIES[code] = currency
    return currency


for _code, _exponent, _symbol, _name in [
    ("USD", 2, "$", "US Dollar"),
    ("EUR", 2, "€", "Euro"),
    ("GBP", 2, "£", "Pound Sterling"),
    ("CHF", 2, "CHF", "Swiss Franc"),
    ("CAD", 2, "CA$", "Canadian Dollar"),
    ("AUD", 2, "A$", "Australian Dollar"),
    ("INR", 2, "₹", "Indian Rupee"),
    ("CNY", 2, "CN¥", "Yuan Renminbi"),
    ("JPY", 0, "¥", "Yen"),
    ("KRW", 0, "₩", "Won"),
    ("ISK", 0, "kr", "Iceland Krona"),
    ("KWD", 3, "KD", "Kuwaiti Dinar"),
    ("BHD", 3, "BD", "Bahraini Dinar"),
    ("SEK", 2, "kr", "Swedish Krona"),
    ("BTC", 8, "₿", "Bitcoin"),
]:
    register_currency(_code, _exponent, _symbol, _name)


def get_currency(code: str | Currency) -> Currency:
    if isinstance(code, Currency):
        return code
    try:
        return _CURRENCIES[code.upper()]
    except (KeyError, AttributeError):
        raise UnknownCurrency(str(code)) from None


# -- money --------------------------------------------------------------------------------------------


@dataclass(frozen=True, init=False, order=False)
class Money:
    """An amount in a currency, rounded to the currency's minor unit."""

    amount: Decimal
    currency: Currency
    _rounding: str = field(default="half_up", repr=False, compare=False)

    def __init__(self, amount, currency: str | Currency, rounding: str = "half_up"):
        cur = get_currency(currency)
        object.__setattr__(self, "currency", cur)
        object.__setattr__(self, "_rounding", rounding)
        object.__setattr__(self, "amount", round_amount(to_decimal(amount), cur.exponent, rounding))

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    def zero(cls, currency: str | Currency) -> Money:
        return cls(0, currency)

    @classmethod
    def from_minor(cls, units: int, currency: str | Currency) -> Money:
        """Money from an integer number of minor units: from_minor(1999, "USD") is $19.99."""
        cur = get_currency(currency)
        return cls(from_minor_units(units), cur)

    @property
    def minor_units(self) -> int:
        """The amount in minor units: Money("19.99", "USD").minor_units == 1999."""
        return to_minor_units(self.amount)

    def _new(self, amount: Decimal) -> Money:
        return Money(amount, self.currency, self._rounding)

    def _check_same(self, other: Money, operation: str) -> None:
        if not isinstance(other, Money):
            raise TypeError(f"cannot {operation} Money and {type(other).__name__}")
        if other.currency != self.currency:
            raise CurrencyMismatch(self.currency.code, other.currency.code, operation)

    # -- arithmetic --------------------------------------------------------------------------------

    def __add__(self, other: Money) -> Money:
        if isinstance(other, int) and other == 0:
            return self  # lets sum() start from 0
        self._check_same(other, "add")
        return self._new(self.amount + other.amount)

    __radd__ = __add__

    def __sub__(self, other: Money) -> Money:
        self._check_same(other, "subtract")
        return self._new(self.amount - other.amount)

    def __mul__(self, factor) -> Money:
        if isinstance(factor, Money):
            raise TypeError("cannot multiply Money by Money")
        return self._new(self.amount * to_decimal(factor))

    __rmul__ = __mul__

    def __truediv__(self, other):
        """Money / number -> Money (rounded); Money / Money -> Decimal ratio."""
        if isinstance(other, Money):
            self._check_same(other, "divide")
            if other.amount == 0:
                raise ZeroDivisionError("division by a zero amount")
            return self.amount / other.amount
        divisor = to_decimal(other)
        if divisor == 0:
            raise ZeroDivisionError("division of money by zero")
        return self._new(self.amount / divisor)

    def __neg__(self) -> Money:
        return self._new(-self.amount)

    def __pos__(self) -> Money:
        return self

    def __abs__(self) -> Money:
        return self._new(abs(self.amount))

    def __bool__(self) -> bool:
        return self.amount != 0

    # -- comparison --------------------------------------------------------------------------------

    def __eq__(self, other) -> bool:
        if not isinstance(other, Money):
            return NotImplemented
        return self.currency == other.currency and self.amount == other.amount

    def __hash__(self) -> int:
        return hash((self.currency.code, self.amount))

    def __lt__(self, other: Money) -> bool:
        self._check_same(other, "compare")
        return self.amount < other.amount

    def __le__(self, other: Money) -> bool:
        self._check_same(other, "compare")
        return self.amount <= other.amount

    def __gt__(self, other: Money) -> bool:
        self._check_same(other, "compare")
        return self.amount > other.amount

    def __ge__(self, other: Money) -> bool:
        self._check_same(other, "compare")
        return self.amount >= other.amount

    def is_zero(self) -> bool:
        return self.amount == 0

    def is_negative(self) -> bool:
        return self.amount < 0

    # -- splitting ---------------------------------------------------------------------------------

    def allocate(self, ratios: Sequence[int | str | Decimal]) -> list[Money]:
        """Split into parts proportional to `ratios` without losing or creating a single minor unit.

        Each part gets the floor of its exact share; the leftover units go one each to the parts with
        the largest remainders (earliest part first on ties), so the parts always sum to the original.
        """
        weights = [to_decimal(r) for r in ratios]
        if not weights:
            raise ValueError("allocate needs at least one ratio")
        if any(w < 0 for w in weights):
            raise ValueError("ratios must not be negative")
        weight_sum = sum(weights)
        if weight_sum == 0:
            raise ValueError("ratios must not all be zero")
        units = self.minor_units
        sign = -1 if units < 0 else 1
        units = abs(units)
        shares = [units * w / weight_sum for w in weights]
        parts = [int(share) for share in shares]
        leftover = units - sum(parts)
        by_remainder = sorted(range(len(parts)), key=lambda i: (-(shares[i] - parts[i]), i))
        for index in by_remainder[:leftover]:
            parts[index] += 1
        return [Money.from_minor(sign * part, self.currency) for part in parts]

    def split(self, count: int) -> list[Money]:
        """Split into `count` near-equal parts (the first parts get the extra minor units)."""
        if count < 1:
            raise ValueError("count must be at least 1")
        return self.allocate([1] * count)

    def percent(self, rate) -> Money:
        """`rate` percent of this amount: Money("80", "USD").percent("12.5") -> $10.00."""
        return self._new(self.amount * to_decimal(rate) / 100)

    # -- text --------------------------------------------------------------------------------------

    def __str__(self) -> str:
        return f"{self.amount} {self.currency.code}"

    def __repr__(self) -> str:
        return f"Money({str(self.amount)!r}, {self.currency.code!r})"

    def __format__(self, spec: str) -> str:
        # f"{price:de_DE}" formats for a locale; an empty spec gives str().
        return format_money(self, spec) if spec else str(self)


def total(amounts: Iterable[Money], currency: str | Currency | None = None) -> Money:
    """Sum of `amounts`; `currency` is required when the iterable may be empty."""
    items = list(amounts)
    if not items:
        if currency is None:
            raise ValueError("total of no amounts needs a currency")
        return Money.zero(currency)
    result = items[0]
    for item in items[1:]:
        result = result + item
    if currency is not None and result.currency != get_currency(currency):
        raise CurrencyMismatch(result.currency.code, get_currency(currency).code, "total")
    return result


# -- taxes, discounts, cash rounding -----------------------------------------------------------------


@dataclass(frozen=True)
class TaxBreakdown:
    """Net, tax and gross parts of a price; always net + tax == gross exactly."""

    net: Money
    tax: Money
    gross: Money
    rate: Decimal


def add_tax(net: Money, rate) -> TaxBreakdown:
    """Tax on a net price: add_tax(Money("100", "EUR"), "19") -> tax 19.00, gross 119.00."""
    percent = to_decimal(rate)
    if percent < 0:
        raise ValueError("tax rate must not be negative")
    tax = net.percent(percent)
    return TaxBreakdown(net=net, tax=tax, gross=net + tax, rate=percent)


def extract_tax(gross: Money, rate) -> TaxBreakdown:
    """Split a tax-inclusive price (VAT-style): the net is rounded, the tax is the exact difference."""
    percent = to_decimal(rate)
    if percent < 0:
        raise ValueError("tax rate must not be negative")
    net = Money(gross.amount * 100 / (100 + percent), gross.currency)
    return TaxBreakdown(net=net, tax=gross - net, gross=gross, rate=percent)


def apply_discount(price: Money, percent) -> Money:
    """Price after a percentage discount, never below zero."""
    off = to_decimal(percent)
    if not 0 <= off <= 100:
        raise ValueError(f"discount must be between 0 and 100 percent, got {percent}")
    return price - price.percent(off)


def cash_round(money: Money, increment="0.05") -> Money:
    """Round to the smallest coin actually in circulation (CHF 0.05, SEK 1), half away from zero."""
    step = to_decimal(increment)
    if step <= 0:
        raise ValueError("increment must be positive")
    steps = round_amount(money.amount / step, 0, "half_up")
    return Money(steps * step, money.currency)


# -- serialization ------------------------------------------------------------------------------------


def to_dict(money: Money) -> dict[str, str]:
    """JSON-safe form: the amount as a string so no precision is lost in transit."""
    return {"amount": str(money.amount), "currency": money.currency.code}


def from_dict(data: Mapping[str, object]) -> Money:
    """Inverse of to_dict; also accepts {"minor_units": 1999, "currency": "USD"}."""
    try:
        code = data["currency"]
    except KeyError:
        raise MoneyError("money object needs a 'currency' field") from None
    if "minor_units" in data:
        units = data["minor_units"]
        if not isinstance(units, int) or isinstance(units, bool):
            raise MoneyError(f"minor_units must be an integer, got {units!r}")
        return Money.from_minor(units, code)
    if "amount" not in data:
        raise MoneyError("money object needs an 'amount' or 'minor_units' field")
    amount = Money(data["amount"], code)
    if amount.amount != to_decimal(data["amount"]):
        raise MoneyError(f"{data['amount']} has more decimals than {code} allows")
    return amount


# -- formatting ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Locale:
    """How a locale writes amounts.

    `pattern` places the symbol (¤) and the number (#); `grouping` lists group sizes from the right,
    the last one repeating: (3,) for 1,234,567 and (3, 2) for the Indian 12,34,567.
    """

    decimal: str = "."
    group: str = ","
    pattern: str = "¤#"
    negative: str = "-{}"
    grouping: tuple[int, ...] = (3,)


LOCALES: dict[str, Locale] = {
    "en_US": Locale(),
    "en_GB": Locale(),
    "de_DE": Locale(decimal=",", group=".", pattern="# ¤"),
    "fr_FR": Locale(decimal=",", group="\u202f", pattern="# ¤"),
    "de_CH": Locale(decimal=".", group="’", pattern="¤ #"),
    "ja_JP": Locale(),
    "en_IN": Locale(grouping=(3, 2)),
    "accounting": Locale(negative="({})"),
}


def _group_digits(digits: str, separator: str, grouping: tuple[int, ...]) -> str:
    groups = []
    sizes = list(grouping)
    while digits:
        size = sizes.pop(0) if len(sizes) > 1 else sizes[0]
        groups.append(digits[-size:])
        digits = digits[:-size]
    return separator.join(reversed(groups))


def format_number(amount: Decimal, exponent: int, locale: Locale) -> str:
    """Digits of abs(amount) with the locale's group and decimal separators."""
    text = f"{abs(amount):.{exponent}f}"
    whole, _, fraction = text.partition(".")
    whole = _group_digits(whole, locale.group, locale.grouping)
    return f"{whole}{locale.decimal}{fraction}" if fraction else whole


def format_money(money: Money, locale: str | Locale = "en_US", *, symbol: bool = True) -> str:
    """Money as a locale would print it: "$1,234.50", "1.234,50 €", "¥1,235", "₹12,34,567.00".

    With `symbol=False` the ISO code is used instead of the symbol ("1,234.50 USD").
    """
    loc = LOCALES.get(locale) if isinstance(locale, str) else locale
    if loc is None:
        raise ValueError(f"unknown locale {locale!r}; known: {sorted(LOCALES)}")
    number = format_number(money.amount, money.currency.exponent, loc)
    if symbol:
        text = loc.pattern.replace("¤", money.currency.symbol).replace("#", number)
    else:
        text = f"{number} {money.currency.code}"
    return loc.negative.format(text) if money.amount < 0 else text


# -- parsing ------------------------------------------------------------------------------------------

_SYMBOLS_BY_LENGTH = None


def _symbol_table() -> list[tuple[str, Currency]]:
    # Longest symbols first so "CA$" wins over "$"; "$" means USD, "kr" is ambiguous and needs a default.
    table = {}
    for currency in _CURRENCIES.values():
        table.setdefault(currency.symbol, currency)
    table["$"] = _CURRENCIES["USD"]
    return sorted(table.items(), key=lambda item: -len(item[0]))


def _normalize_number(text: str, decimal: str | None) -> str:
    """Turn '1.234,56' or '1,234.56' or '1 234' into '1234.56'."""
    text = text.replace(" ", "").replace("\u202f", "").replace("\u00a0", "").replace("’", "").replace("'", "")
    if decimal is None:
        # Guess: the last separator followed by exactly 1, 2 or 3 digits and appearing once is decimal,
        # unless it is a comma followed by 3 digits (a thousands group in en_US).
        last = max(text.rfind("."), text.rfind(","))
        if last == -1:
            return text
        sep = text[last]
        tail = text[last + 1:]
        if text.count(sep) == 1 and not (sep == "," and len(tail) == 3):
            decimal = sep
        else:
            decimal = "." if sep == "," else ","
    group = "," if decimal == "." else "."
    return text.replace(group, "").replace(decimal, ".")


_AMOUNT_RE = re.compile(r"^(?P<sign>[-+])?(?P<prefix>[^\d\s.,()+-]*)\s*(?P<number>[\d.,\s\u202f\u00a0’']+?)"
                        r"\s*(?P<suffix>[^\d\s.,()]*)$")


def parse_money(text: str, default_currency: str | None = None, *, decimal: str | None = None) -> Money:
    """Read "$1,234.56", "1.234,56 €", "-¥500", "USD 12.00", "(45.00) EUR" (accounting negative).

    The currency comes from a symbol or an ISO code in the text, else `default_currency`. The decimal
    separator is guessed unless `decimal` is given.
    """
    original = text
    text = text.strip()
    negative = False
    if text.startswith("(") and text.endswith(")"):
        negative, text = True, text[1:-1].strip()
    elif text.startswith("(") and ")" in text:
        # "(45.00) EUR"
        close = text.index(")")
        negative, text = True, (text[1:close] + text[close + 1:]).strip()
    code_match = re.match(r"^([A-Z]{3})\s+(.*)$", text) or re.match(r"^(.*?)\s+([A-Z]{3})$", text)
    currency: Currency | None = None
    if code_match:
        first, second = code_match.groups()
        code, text = (first, second) if re.fullmatch(r"[A-Z]{3}", first) else (second, first)
        currency = get_currency(code)
    match = _AMOUNT_RE.match(text)
    if not match:
        raise ParseError(f"cannot read an amount from {original!r}")
    marker = (match.group("prefix") or match.group("suffix") or "").strip()
    if marker:
        if marker.startswith("-"):
            negative, marker = True, marker[1:]
        for symbol, candidate in _symbol_table():
            if marker == symbol:
                currency = currency or candidate
                break
        else:
            raise ParseError(f"unknown currency symbol {marker!r} in {original!r}")
    if match.group("sign") == "-":
        negative = True
    if currency is None:
        if default_currency is None:
            raise ParseError(f"no currency in {original!r} and no default given")
        currency = get_currency(default_currency)
    number = _normalize_number(match.group("number"), decimal)
    try:
        amount = to_decimal(number)
    except ValueError:
        raise ParseError(f"cannot read an amount from {original!r}") from None
    return Money(-amount if negative else amount, currency)


# -- exchange rates -----------------------------------------------------------------------------------


class ExchangeRates:
    """Conversion rates quoted against one base currency.

    `set_rate("EUR", "0.92")` means 1 base = 0.92 EUR. Any pair is derived through the base, and the base
    itself has rate 1. Converted amounts are rounded to the target currency's minor unit.
    """

    def __init__(self, base: str = "USD", rates: Mapping[str, object] | None = None):
        self.base = get_currency(base)
        self._rates: dict[str, Decimal] = {self.base.code: Decimal(1)}
        for code, rate in (rates or {}).items():
            self.set_rate(code, rate)

    def set_rate(self, code: str, rate) -> None:
        currency = get_currency(code)
        value = to_decimal(rate)
        if value <= 0:
            raise ValueError(f"exchange rate for {currency.code} must be positive")
        if currency == self.base and value != 1:
            raise ValueError("the base currency's rate is always 1")
        self._rates[currency.code] = value

    def rate(self, source: str | Currency, target: str | Currency) -> Decimal:
        """How many `target` units one `source` unit buys."""
        src, dst = get_currency(source), get_currency(target)
        missing = [c.code for c in (src, dst) if c.code not in self._rates]
        if missing:
            raise MoneyError(f"no exchange rate for {', '.join(missing)} (base {self.base.code})")
        return self._rates[dst.code] / self._rates[src.code]

    def convert(self, money: Money, target: str | Currency, rounding: str = "half_even") -> Money:
        dst = get_currency(target)
        if dst == money.currency:
            return money
        return Money(money.amount * self.rate(money.currency, dst), dst, rounding)

    def total_in(self, amounts: Iterable[Money], target: str | Currency) -> Money:
        """Sum of amounts in mixed currencies, each converted to `target` before adding."""
        dst = get_currency(target)
        return total((self.convert(m, dst) for m in amounts), dst)

    def __contains__(self, code: str) -> bool:
        return code.upper() in self._rates

    def __repr__(self) -> str:
        return f"ExchangeRates(base={self.base.code!r}, currencies={sorted(self._rates)})"
