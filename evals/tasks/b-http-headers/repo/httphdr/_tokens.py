"""Low-level lexing shared by the header parsers: tokens, quoted strings and list splitting."""

from __future__ import annotations

import re

# tchar from RFC 9110 section 5.6.2
TOKEN_RE = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


def is_token(text: str) -> bool:
    return bool(TOKEN_RE.match(text))


def quote(value: str) -> str:
    """`value` as is when it is a token, else as a quoted-string with '"' and '\\' escaped."""
    if is_token(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def unquote(value: str) -> str:
    """Strip one level of quoted-string quoting; unquoted input comes back stripped."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        out = []
        chars = iter(value[1:-1])
        for ch in chars:
            out.append(next(chars, "") if ch == "\\" else ch)
        return "".join(out)
    return value


def split_list(value: str) -> list[str]:
    """Split a comma-separated header list, ignoring separators inside quoted strings and <...> URIs.

    Empty items (from ``a,,b`` or trailing separators) are dropped, as RFC 9110 section 5.6.1 asks.
    """
    items: list[str] = []
    current: list[str] = []
    in_quotes = in_angle = escaped = False
    for ch in value:
        if escaped:
            escaped = False
        elif in_quotes and ch == "\\":
            escaped = True
        elif ch == '"' and not in_angle:
            in_quotes = not in_quotes
        elif ch == "<" and not in_quotes:
            in_angle = True
        elif ch == ">" and not in_quotes:
            in_angle = False
        elif ch == "," and not in_quotes and not in_angle:
            items.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    items.append("".join(current).strip())
    return [item for item in items if item]
