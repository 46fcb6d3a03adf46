"""Build, parse and edit URL query strings.

Values are rendered the way most web APIs expect them:

* ``None`` drops the parameter entirely;
* booleans become ``true`` / ``false``;
* lists, tuples and sets repeat the key (``tag=a&tag=b``); sets are sorted so URLs are stable;
* dates and datetimes use ISO 8601;
* everything else goes through ``str()``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

Params = Mapping[str, object] | Iterable[tuple[str, object]]

# Characters left unescaped in keys and values, beyond letters, digits and "_.-~".
SAFE_CHARS = ""


def _render_scalar(value: object) -> str:
    """One query value as text."""
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def _pairs(params: Params) -> list[tuple[str, str]]:
    """Flatten `params` into (key, text) pairs in order, expanding sequences and dropping None."""
    items = params.items() if isinstance(params, Mapping) else params
    pairs: list[tuple[str, str]] = []
    for key, value in items:
        if not isinstance(key, str) or not key:
            raise TypeError(f"query keys must be non-empty strings, got {key!r}")
        if value is None:
            continue
        if isinstance(value, (set, frozenset)):
            values: Iterable[object] = sorted(value, key=_render_scalar)
        elif isinstance(value, (list, tuple)):
            values = value
        else:
            values = [value]
        for item in values:
            if item is None:
                continue
            if isinstance(item, (list, tuple, set, frozenset, dict)):
                raise TypeError(f"nested containers are not allowed in query value for {key!r}")
            pairs.append((key, _render_scalar(item)))
    return pairs


def build_query(params: Params, *, sort: bool = False) -> str:
    """Encode `params` as a query string without the leading '?'.

    >>> build_query({"q": "tea & cake", "page": 2, "tag": ["a", "b"], "debug": None})
    'q=tea%20%26%20cake&page=2&tag=a&tag=b'
    """
    pairs = _pairs(params)
    if sort:
        pairs.sort(key=lambda pair: pair[0])  # stable: repeated keys keep their order
    return "&".join(f"{quote(k, safe=SAFE_CHARS)}={quote(v, safe=SAFE_CHARS)}" for k, v in pairs)


def parse_query(query: str) -> dict[str, list[str]]:
    """Decode a query string (with or without '?') into key -> list of values, in order of appearance."""
    result: dict[str, list[str]] = {}
    for key, value in parse_qsl(query.lstrip("?"), keep_blank_values=True, strict_parsing=False):
        result.setdefault(key, []).append(value)
    return result


def _replace_query(url: str, query: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


def with_query(url: str, params: Params, *, sort: bool = False) -> str:
    """Replace the whole query of `url` with `params`; the fragment is kept."""
    return _replace_query(url, build_query(params, sort=sort))


def add_params(url: str, params: Params) -> str:
    """Set parameters on `url`, keeping the ones already there.

    A key given in `params` replaces all existing values of that key; a None value removes the key.
    """
    existing = parse_query(urlsplit(url).query)
    new_pairs = _pairs(params)
    items = params.items() if isinstance(params, Mapping) else params
    touched = {key for key, _ in items}
    merged: list[tuple[str, str]] = [(k, v) for k, vs in existing.items() if k not in touched for v in vs]
    merged.extend(new_pairs)
    return _replace_query(url, build_query(merged))


def remove_params(url: str, *keys: str) -> str:
    """Drop every value of each of `keys` from the query of `url`."""
    existing = parse_query(urlsplit(url).query)
    kept = [(k, v) for k, vs in existing.items() if k not in keys for v in vs]
    return _replace_query(url, build_query(kept))


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_url(url: str) -> str:
    """Canonical form for comparing or caching URLs.

    Lowercases the scheme and host, drops the default port, an empty fragment and blank query,
    and sorts the query by key (values of one key keep their order).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    netloc = host
    if parts.username:
        credentials = parts.username + (f":{parts.password}" if parts.password else "")
        netloc = f"{credentials}@{host}"
    if parts.port is not None and parts.port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{parts.port}"
    pairs = [(k, v) for k, vs in parse_query(parts.query).items() for v in vs]
    query = build_query(pairs, sort=True)
    return urlunsplit((scheme, netloc, parts.path or "/", query, parts.fragment))


def join_path(url: str, *segments: str) -> str:
    """Append path segments to `url`, escaping each one and keeping its query and fragment.

    >>> join_path("https://api.x.org/v1/?k=1", "users", "a b")
    'https://api.x.org/v1/users/a%20b?k=1'
    """
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    for segment in segments:
        if not segment or segment in (".", ".."):
            raise ValueError(f"invalid path segment {segment!r}")
        path += "/" + quote(segment, safe="")
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))
