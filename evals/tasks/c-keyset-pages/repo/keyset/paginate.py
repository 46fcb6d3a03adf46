"""Keyset pagination over rows ordered by (sort field, id).

A page holds at most `limit` rows. One extra row is read past the page (the look-ahead) only to learn
whether another page exists; cursors point at the first and last rows actually on the page, and the next
page starts strictly after its cursor's key (the previous one strictly before).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from keyset.cursor import decode_cursor, encode_cursor

Row = dict[str, Any]
MAX_LIMIT = 100


@dataclass(frozen=True)
class Page:
    items: list[Row]
    next_cursor: str | None
    prev_cursor: str | None

    @property
    def has_next(self) -> bool:
        return self.next_cursor is not None

    @property
    def has_prev(self) -> bool:
        return self.prev_cursor is not None


def _key_function(sort_field: str) -> Callable[[Row], tuple[Any, Any]]:
    def key(row: Row) -> tuple[Any, Any]:
        return (row[sort_field], row["id"])

    return key


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")


def _cursor_key(cursor: str, sort_field: str) -> tuple[Any, Any]:
    key = decode_cursor(cursor)
    if len(key) != 2:
        raise ValueError(f"cursor does not match the sort on {sort_field!r}")
    return key  # type: ignore[return-value]


def paginate(rows: Sequence[Row], limit: int = 20, after: str | None = None, before: str | None = None,
             sort_field: str = "created") -> Page:
    """One page of `rows`: the first page, the page after cursor `after`, or the page before `before`."""
    _check_limit(limit)
    if after is not None and before is not None:
        raise ValueError("give at most one of after and before")
    key = _key_function(sort_field)
    ordered = sorted(rows, key=key)

    if before is None:
        start = _cursor_key(after, sort_field) if after is not None else None
        candidates = [r for r in ordered if start is None or key(r) > start]
        window = candidates[:limit + 1]  # one look-ahead row
        items = window[:limit]
        has_more = len(window) > limit
        next_cursor = encode_cursor(key(window[-1])) if has_more else None
        earlier = len(candidates) < len(ordered)
        prev_cursor = encode_cursor(key(items[0])) if earlier and items else None
        return Page(items, next_cursor, prev_cursor)

    end = _cursor_key(before, sort_field)
    candidates = [r for r in ordered if key(r) < end]
    window = candidates[-(limit + 1):]  # one look-ahead row, at the front
    has_more = len(window) > limit
    items = window[:limit]
    prev_cursor = encode_cursor(key(window[0])) if has_more else None
    later = len(candidates) < len(ordered)
    next_cursor = encode_cursor(key(items[-1])) if later and items else None
    return Page(items, next_cursor, prev_cursor)


def iter_pages(fetch: Callable[[str | None], Page], max_pages: int = 10_000) -> Iterator[Row]:
    """Every row, following next cursors from the first page; `fetch(cursor)` returns one page."""
    cursor: str | None = None
    for _ in range(max_pages):
        page = fetch(cursor)
        yield from page.items
        if page.next_cursor is None:
            return
        if page.next_cursor == cursor:
            raise RuntimeError("the next cursor did not move; the listing is not advancing")
        cursor = page.next_cursor
    raise RuntimeError(f"more than {max_pages} pages")
