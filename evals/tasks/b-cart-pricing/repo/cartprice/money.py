"""Money helpers: Decimal amounts rounded to each currency's minor unit."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# ISO 4217 minor-unit digits; currencies not listed use 2.
CURRENCY_DIGITS = {"JPY": 0, "KRW": 0, "ISK": 0, "CLP": 0, "BHD": 3, "KWD": 3, "JOD": 3}
SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥", "CHF": "CHF "}

ZERO = Decimal("0")


class MoneyError(ValueError):
    pass


def digits(currency: str) -> int:
    return CURRENCY_DIGITS.get(currency.upper(), 2)


def minor_unit(currency: str) -> Decimal:
    """The smallest amount of `currency`: 0.01 for EUR, 1 for JPY, 0.001 for BHD."""
    return Decimal(1).scaleb(-digits(currency))


def to_decimal(value: Decimal | int | str) -> Decimal:
    """Parse an amount; floats are refused because they cannot represent most prices exactly."""
    if isinstance(value, float):
        raise MoneyError(f"use Decimal or str for money, not float ({value!r})")
    try:
        amount = Decimal(value)
    except (InvalidOperation, TypeError, ValueError) as exc:
        raise MoneyError(f"not an amount: {value!r}") from exc
    if not amount.is_finite():
        raise MoneyError(f"not a finite amount: {value!r}")
    return amount


def quantize(amount: Decimal) -> Decimal:
    """Round half up to cents (commercial rounding)."""
    return amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def percent_of(amount: Decimal, percent: Decimal | int | str) -> Decimal:
    """`percent` % of `amount`, unrounded."""
    return amount * to_decimal(percent) / 100


def allocate(total: Decimal, weights: list[Decimal], currency: str) -> list[Decimal]:
    """Split `total` in proportion to `weights` so that the parts add up to `total` exactly.

    Works in minor units and hands leftover units to the largest remainders (ties: earlier first),
    e.g. allocate(10.00, [1, 1, 1], "EUR") -> [3.34, 3.33, 3.33].
    """
    if not weights:
        return []
    if any(w < 0 for w in weights):
        raise MoneyError("weights must not be negative")
    unit = minor_unit(currency)
    units = int((total / unit).to_integral_value(rounding=ROUND_HALF_UP))
    weight_sum = sum(weights, ZERO)
    if weight_sum == 0:
        weights, weight_sum = [Decimal(1)] * len(weights), Decimal(len(weights))
    exact = [units * w / weight_sum for w in weights]
    parts = [int(e) for e in exact]  # int() truncates toward zero, also for negative totals
    leftover = units - sum(parts)
    step = 1 if leftover >= 0 else -1
    order = sorted(range(len(weights)), key=lambda i: (-(abs(exact[i] - parts[i])), i))
    for i in order[: abs(leftover)]:
        parts[i] += step
    return [Decimal(p) * unit for p in parts]


def format_money(amount: Decimal, currency: str) -> str:
    """'€1,234.50', '¥1,235', '-$3.00'."""
    amount = quantize(amount)
    sign = "-" if amount < 0 else ""
    symbol = SYMBOLS.get(currency.upper(), currency.upper() + " ")
    return f"{sign}{symbol}{abs(amount):,.{digits(currency)}f}"
