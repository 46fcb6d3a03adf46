"""The backing store: an in-memory table of user rows that counts its reads (the expensive part)."""

from __future__ import annotations

from typing import Any


class MemoryStore:
    def __init__(self) -> None:
        self._rows: dict[int, dict[str, Any]] = {}
        self._next_id = 1
        self.reads = 0

    def insert(self, row: dict[str, Any]) -> int:
        user_id = self._next_id
        self._next_id += 1
        self._rows[user_id] = {**row, "id": user_id}
        return user_id

    def fetch(self, user_id: int) -> dict[str, Any] | None:
        self.reads += 1
        row = self._rows.get(user_id)
        return dict(row) if row else None

    def fetch_by(self, column: str, value: Any) -> dict[str, Any] | None:
        self.reads += 1
        for row in self._rows.values():
            if row.get(column) == value:
                return dict(row)
        return None

    def save(self, row: dict[str, Any]) -> None:
        if row["id"] not in self._rows:
            raise KeyError(row["id"])
        self._rows[row["id"]] = dict(row)

    def remove(self, user_id: int) -> bool:
        return self._rows.pop(user_id, None) is not None

    def scan(self) -> list[dict[str, Any]]:
        self.reads += 1
        return [dict(r) for r in sorted(self._rows.values(), key=lambda r: r["id"])]
