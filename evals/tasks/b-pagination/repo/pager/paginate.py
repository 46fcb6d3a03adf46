"""Split a sequence into numbered pages and compute the page links to show around the current page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results. Page numbers start at 1."""

    items: list[T]
    number: int
    per_page: int
    total_items: int

    @property
    def total_pages(self) -> int:
        return page_count(self.total_items, self.per_page)

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.total_pages

    @property
    def start_index(self) -> int:
        """1-based index of the first item on this page (0 when the page is empty)."""
        return (self.number - 1) * self.per_page + 1 if self.items else 0

    @property
    def end_index(self) -> int:
        """1-based index of the last item on this page (0 when the page is empty)."""
        return self.start_index + len(self.items) - 1 if self.items else 0


def page_count(total_items: int, per_page: int) -> int:
    """Number of pages needed for `total_items`; an empty listing still has one (empty) page."""
    if per_page < 1:
        raise ValueError("per_page must be at least 1")
    if total_items < 0:
        raise ValueError("total_items cannot be negative")
    return max(1, (total_items + per_page) // per_page)


def paginate(items: Sequence[T], number: int, per_page: int = 20) -> Page[T]:
    """Return page `number` of `items`; a number past the end raises ValueError."""
    pages = page_count(len(items), per_page)
    if not 1 <= number <= pages:
        raise ValueError(f"page {number} out of range 1..{pages}")
    start = (number - 1) * per_page
    return Page(list(items[start:start + per_page]), number, per_page, len(items))


def page_window(current: int, total_pages: int, width: int = 2) -> list[int | None]:
    """Page numbers to link to: first, last and `width` pages either side of `current`.

    Gaps are None, rendered as an ellipsis: page_window(10, 20) -> [1, None, 8, 9, 10, 11, 12, None, 20].
    """
    if not 1 <= current <= total_pages:
        raise ValueError(f"page {current} out of range 1..{total_pages}")
    shown = {1, total_pages, *range(max(1, current - width), min(total_pages, current + width) + 1)}
    window: list[int | None] = []
    for number in sorted(shown):
        if window and number - window[-1] > 1:  # type: ignore[operator]
            window.append(None)
        window.append(number)
    return window
