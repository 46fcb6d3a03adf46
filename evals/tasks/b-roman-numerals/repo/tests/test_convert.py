import pytest

from romanum import from_roman, to_roman


@pytest.mark.parametrize("number, numeral", [(1, "I"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"),
                                             (90, "XC"), (400, "CD"), (1994, "MCMXCIV"), (3999, "MMMCMXCIX")])
def test_to_roman(number, numeral):
    assert to_roman(number) == numeral


@pytest.mark.parametrize("bad", [0, -3, 4000, 2.5, True, "12"])
def test_to_roman_rejects_out_of_range(bad):
    with pytest.raises(ValueError):
        to_roman(bad)


def test_from_roman_subtractive_pairs():
    assert from_roman("IV") == 4
    assert from_roman("XC") == 90
    assert from_roman("mcmxciv") == 1994


def test_from_roman_repeated_symbols():
    assert from_roman("III") == 3
    assert from_roman("XX") == 20
    assert from_roman("MMXXIV") == 2024


@pytest.mark.parametrize("bad", ["", "ABC", "IIII", "VX", "IC"])
def test_from_roman_rejects_invalid(bad):
    with pytest.raises(ValueError):
        from_roman(bad)


def test_round_trip():
    for number in range(1, 4000):
        assert from_roman(to_roman(number)) == number
