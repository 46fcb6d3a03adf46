"""The user directory: lookups by id and by email go through a TTL cache in front of the store.

Both lookups cache the whole User (and a lookup that finds nothing caches None), so every write must drop
each cache entry that could now be wrong.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable

from userdir.cache import MISSING, TTLCache
from userdir.store import MemoryStore

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.IGNORECASE)
ROLES = ("member", "admin", "owner")


class UserNotFound(KeyError):
    pass


class DuplicateEmail(ValueError):
    pass


@dataclass(frozen=True)
class User:
    id: int
    email: str
    name: str
    role: str = "member"
    active: bool = True
    tags: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> User:
        return cls(row["id"], row["email"], row["name"], row.get("role", "member"), row.get("active", True),
                   tuple(row.get("tags", ())))

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["tags"] = list(self.tags)
        return row


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    if not _EMAIL.match(email):
        raise ValueError(f"not an email address: {email!r}")
    return email


def _user_key(user_id: int) -> str:
    return f"user:{user_id}"


def _email_key(email: str) -> str:
    return f"email:{email}"


class UserDirectory:
    def __init__(self, store: MemoryStore | None = None, cache: TTLCache | None = None):
        self.store = store or MemoryStore()
        self.cache = cache or TTLCache()

    # ------------------------------------------------------------------ reads

    def get(self, user_id: int) -> User:
        user = self.cache.get(_user_key(user_id))
        if user is MISSING:
            row = self.store.fetch(user_id)
            user = User.from_row(row) if row else None
            self.cache.set(_user_key(user_id), user)
        if user is None:
            raise UserNotFound(user_id)
        return user

    def find_by_email(self, email: str) -> User | None:
        email = normalize_email(email)
        user = self.cache.get(_email_key(email))
        if user is MISSING:
            row = self.store.fetch_by("email", email)
            user = User.from_row(row) if row else None
            self.cache.set(_email_key(email), user)
        return user

    def exists(self, email: str) -> bool:
        return self.find_by_email(email) is not None

    def list_users(self, active_only: bool = True, role: str | None = None) -> list[User]:
        """All users (uncached: listings are rare and must be exact)."""
        users = [User.from_row(r) for r in self.store.scan()]
        return [u for u in users if (u.active or not active_only) and (role is None or u.role == role)]

    def search(self, text: str) -> list[User]:
        needle = text.strip().lower()
        return [u for u in self.list_users(active_only=False) if needle in u.name.lower() or needle in u.email]

    # ----------------------------------------------------------------- writes

    def create(self, email: str, name: str, role: str = "member", tags: Iterable[str] = ()) -> User:
        email = normalize_email(email)
        self._check_role(role)
        if self.store.fetch_by("email", email) is not None:
            raise DuplicateEmail(email)
        row = {"email": email, "name": name.strip(), "role": role, "active": True, "tags": sorted(set(tags))}
        user_id = self.store.insert(row)
        return self.get(user_id)

    def update(self, user_id: int, **changes: Any) -> User:
        """Change fields of a user; the email stays unique."""
        unknown = set(changes) - {"email", "name", "role", "active", "tags"}
        if unknown:
            raise TypeError(f"unknown fields: {sorted(unknown)}")
        old = self.get(user_id)
        if "email" in changes:
            changes["email"] = normalize_email(changes["email"])
            other = self.store.fetch_by("email", changes["email"])
            if other is not None and other["id"] != user_id:
                raise DuplicateEmail(changes["email"])
        if "role" in changes:
            self._check_role(changes["role"])
        if "tags" in changes:
            changes["tags"] = tuple(sorted(set(changes["tags"])))
        new = replace(old, **changes)
        self.store.save(new.to_row())
        self.cache.set(_user_key(user_id), new)
        return new

    def rename(self, user_id: int, name: str) -> User:
        return self.update(user_id, name=name.strip())

    def change_email(self, user_id: int, email: str) -> User:
        return self.update(user_id, email=email)

    def deactivate(self, user_id: int) -> User:
        return self.update(user_id, active=False)

    def add_tags(self, user_id: int, *tags: str) -> User:
        user = self.get(user_id)
        return self.update(user_id, tags=(*user.tags, *tags))

    def promote(self, user_id: int) -> User:
        user = self.get(user_id)
        position = ROLES.index(user.role)
        if position == len(ROLES) - 1:
            raise ValueError(f"{user.email} already has the highest role")
        return self.update(user_id, role=ROLES[position + 1])

    def delete(self, user_id: int) -> None:
        user = self.get(user_id)
        self.store.remove(user_id)
        self.cache.delete(_user_key(user_id))

    def import_users(self, rows: Iterable[dict[str, Any]]) -> tuple[list[User], list[str]]:
        """Create users from rows; returns (created, errors) and skips bad or duplicate rows."""
        created: list[User] = []
        errors: list[str] = []
        for number, row in enumerate(rows, start=1):
            try:
                created.append(self.create(row["email"], row.get("name", ""), row.get("role", "member"),
                                           row.get("tags", ())))
            except (KeyError, ValueError) as exc:
                errors.append(f"row {number}: {exc}")
        return created, errors

    @staticmethod
    def _check_role(role: str) -> None:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
