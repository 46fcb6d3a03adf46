import pytest

from keyset import iter_pages, paginate
from keyset.cursor import encode_cursor

# 25 rows; several share a timestamp, so the id breaks ties
ROWS = [{"id": i, "created": f"2024-05-{1 + i // 3:02d}"} for i in range(1, 26)]


def ids(page):
    return [r["id"] for r in page.items]


def test_first_page():
    page = paginate(ROWS, limit=10)
    assert ids(page) == list(range(1, 11))
    assert page.has_next and not page.has_prev


def test_second_page_starts_right_after_the_first():
    first = paginate(ROWS, limit=10)
    second = paginate(ROWS, limit=10, after=first.next_cursor)
    assert ids(second) == list(range(11, 21))
    assert second.has_prev and second.has_next


def test_walking_all_pages_sees_every_row_once():
    seen = list(iter_pages(lambda cursor: paginate(ROWS, limit=10, after=cursor)))
    assert [r["id"] for r in seen] == list(range(1, 26))


def test_last_page_has_no_next():
    page = paginate(ROWS, limit=10, after=encode_cursor((ROWS[19]["created"], 20)))
    assert ids(page) == [21, 22, 23, 24, 25] and not page.has_next


def test_exactly_full_last_page_has_no_next():
    page = paginate(ROWS[:20], limit=10, after=encode_cursor((ROWS[9]["created"], 10)))
    assert ids(page) == list(range(11, 21)) and not page.has_next


def test_going_back_returns_the_previous_page():
    third = paginate(ROWS, limit=10, after=encode_cursor((ROWS[19]["created"], 20)))
    second = paginate(ROWS, limit=10, before=third.prev_cursor)
    assert ids(second) == list(range(11, 21))
    first = paginate(ROWS, limit=10, before=second.prev_cursor)
    assert ids(first) == list(range(1, 11)) and not first.has_prev and first.has_next


def test_back_and_forth_is_stable():
    second = paginate(ROWS, limit=7, after=paginate(ROWS, limit=7).next_cursor)
    back = paginate(ROWS, limit=7, before=second.prev_cursor)
    again = paginate(ROWS, limit=7, after=back.next_cursor)
    assert ids(back) == list(range(1, 8)) and ids(again) == ids(second) == list(range(8, 15))


def test_unsorted_input_and_other_sort_field():
    rows = [{"id": 3, "score": 5}, {"id": 1, "score": 9}, {"id": 2, "score": 5}]
    assert ids(paginate(rows, limit=5, sort_field="score")) == [2, 3, 1]


def test_empty_listing():
    page = paginate([], limit=10)
    assert page.items == [] and not page.has_next and not page.has_prev


@pytest.mark.parametrize("limit", [0, 101])
def test_limit_bounds(limit):
    with pytest.raises(ValueError):
        paginate(ROWS, limit=limit)


def test_after_and_before_together():
    cursor = encode_cursor(("2024-05-01", 1))
    with pytest.raises(ValueError):
        paginate(ROWS, after=cursor, before=cursor)
