"""Decimal helpers shared by Money and the exchange-rate code.

Amounts are always Decimal: floats cannot represent most decimal fractions (0.1 + 0.2 != 0.3), so they are
rejected at the boundary rather than silently rounded.
"""

from __future__ import annotations

from decimal import (
    ROUND_CEILING,
    ROUND_DOWN,
    ROUND_FLOOR,
    ROUND_HALF_EVEN,
    ROUND_HALF_UP,
    ROUND_UP,
    Decimal,
    InvalidOperation,
)

ROUNDING_MODES = {
    "half_up": ROUND_HALF_UP,
    "half_even": ROUND_HALF_EVEN,
    "down": ROUND_DOWN,
    "up": ROUND_UP,
    "floor": ROUND_FLOOR,
    "ceiling": ROUND_CEILING,
}


def to_decimal(value) -> Decimal:
    """Decimal from a str, int or Decimal; floats and non-finite values are refused."""
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError(f"use a string or Decimal for money amounts, not {type(value).__name__}")
    try:
        result = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"not a decimal amount: {value!r}") from None
    if not result.is_finite():
        raise ValueError(f"amount must be finite, got {value!r}")
    return result


def resolve_mode(mode: str) -> str:
    try:
        return ROUNDING_MODES[mode]
    except KeyError:
        raise ValueError(f"unknown rounding mode {mode!r}; choose from {sorted(ROUNDING_MODES)}") from None


def round_amount(amount: Decimal, exponent: int, mode: str = "half_up") -> Decimal:
    """Round to `exponent` decimal places (2 for cents, 0 for yen, 3 for fils)."""
    return amount.quantize(Decimal(1).scaleb(-exponent), rounding=resolve_mode(mode))


def to_minor_units(amount: Decimal) -> int:
    """The amount as an integer count of minor units (cents); it must already be rounded."""
    scaled = amount.scaleb(2)
    if scaled != scaled.to_integral_value():
        raise ValueError(f"{amount} has fractional cents")
    return int(scaled)


def from_minor_units(units: int) -> Decimal:
    """Inverse of to_minor_units: 1234 cents -> Decimal('12.34')."""
    return Decimal(int(units)).scaleb(-2)
