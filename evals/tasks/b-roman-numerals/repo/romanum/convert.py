"""Convert between integers and Roman numerals (1..3999)."""

_SYMBOLS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number: int) -> str:
    """Return the Roman numeral for `number` (1 <= number <= 3999)."""
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= 3999:
        raise ValueError(f"cannot write {number!r} as a Roman numeral")
    parts = []
    for value, symbol in _SYMBOLS:
        count, number = divmod(number, value)
        parts.append(symbol * count)
    return "".join(parts)


def from_roman(text: str) -> int:
    """Parse a Roman numeral such as 'MCMXCIV' (case-insensitive, canonical form only)."""
    text = text.strip().upper()
    if not text or any(ch not in _VALUES for ch in text):
        raise ValueError(f"not a Roman numeral: {text!r}")
    total = 0
    for i, ch in enumerate(text):
        value = _VALUES[ch]
        # A smaller symbol before a larger one is subtracted (IV = 4, XC = 90).
        if i + 1 < len(text) and value <= _VALUES[text[i + 1]]:
            total -= value
        else:
            total += value
    if to_roman(total) != text:
        raise ValueError(f"not a canonical Roman numeral: {text!r}")
    return total
