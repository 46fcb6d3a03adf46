import pytest

from pager import page_count, page_window, paginate


def test_page_count_partial_last_page():
    assert page_count(21, 10) == 3
    assert page_count(1, 10) == 1


def test_page_count_exact_multiple():
    assert page_count(20, 10) == 2
    assert page_count(100, 25) == 4


def test_empty_listing_has_one_page():
    page = paginate([], 1)
    assert page.total_pages == 1
    assert page.items == [] and page.start_index == 0 and page.end_index == 0
    assert not page.has_next and not page.has_previous


def test_middle_page_items_and_indices():
    page = paginate(list(range(1, 46)), 2, per_page=20)
    assert page.items == list(range(21, 41))
    assert (page.start_index, page.end_index) == (21, 40)
    assert page.has_previous and page.has_next


def test_last_full_page_has_no_next():
    page = paginate(list(range(30)), 3, per_page=10)
    assert page.items == list(range(20, 30))
    assert not page.has_next


def test_page_past_the_end_is_rejected():
    with pytest.raises(ValueError):
        paginate(list(range(30)), 4, per_page=10)
    with pytest.raises(ValueError):
        paginate(list(range(30)), 0, per_page=10)


def test_bad_per_page():
    with pytest.raises(ValueError):
        page_count(10, 0)


def test_page_window_gaps():
    assert page_window(10, 20) == [1, None, 8, 9, 10, 11, 12, None, 20]
    assert page_window(1, 3) == [1, 2, 3]
    assert page_window(2, 9, width=1) == [1, 2, 3, None, 9]
