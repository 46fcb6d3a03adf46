"""Opaque cursors: the sort key of a row, as URL-safe base64 of a small JSON array, plus a version tag."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

VERSION = 1


class InvalidCursor(ValueError):
    pass


def encode_cursor(key: tuple[Any, ...]) -> str:
    payload = json.dumps([VERSION, *key], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[Any, ...]:
    padded = cursor + "=" * (-len(cursor) % 4)
    try:
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (binascii.Error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidCursor(f"malformed cursor {cursor!r}") from exc
    if not isinstance(data, list) or len(data) < 2 or data[0] != VERSION:
        raise InvalidCursor(f"unsupported cursor {cursor!r}")
    return tuple(data[1:])
