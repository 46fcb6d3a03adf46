import pytest

from keyset import InvalidCursor, decode_cursor, encode_cursor


def test_round_trip():
    cursor = encode_cursor(("2024-05-01T10:00:00", 42))
    assert "=" not in cursor
    assert decode_cursor(cursor) == ("2024-05-01T10:00:00", 42)


@pytest.mark.parametrize("bad", ["!!!", "bm90IGpzb24", encode_cursor(()), "WzIsMSwyXQ"])
def test_bad_cursors(bad):
    with pytest.raises(InvalidCursor):
        decode_cursor(bad)
