"""A case-insensitive header map and parsers for the header values web code meets every day.

Parsers are lenient where browsers are (odd whitespace, empty list items, unknown parameters) and
raise `HeaderError` where guessing would be unsafe (malformed ranges, unbalanced quotes in a media type).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from email.utils import format_datetime, parsedate_to_datetime
from urllib.parse import unquote as percent_decode

from httphdr._tokens import is_token, quote, split_list, unquote


class HeaderError(ValueError):
    """A header value that cannot be parsed."""


# --- the header map -----------------------------------------------------------------------------


class Headers:
    """An ordered multi-map of header fields with case-insensitive names.

    Keeps the original spelling of each name for output; `get` joins repeated fields with ", " as
    RFC 9110 allows, except for Set-Cookie, which must be read with `get_all`.
    """

    def __init__(self, items: Mapping[str, str] | Iterable[tuple[str, str]] | None = None) -> None:
        self._items: list[tuple[str, str]] = []
        if items is not None:
            pairs = items.items() if isinstance(items, Mapping) else items
            for name, value in pairs:
                self.add(name, value)

    @staticmethod
    def _check(name: str, value: str) -> None:
        if not is_token(name):
            raise HeaderError(f"invalid header name {name!r}")
        if "\r" in value or "\n" in value:
            raise HeaderError(f"header {name!r} contains a line break")

    def add(self, name: str, value: str) -> None:
        """Append a field, keeping any existing fields of the same name."""
        value = str(value).strip()
        self._check(name, value)
        self._items.append((name, value))

    def set(self, name: str, value: str) -> None:
        """Replace every field called `name` with one field."""
        self.remove(name)
        self.add(name, value)

    def setdefault(self, name: str, value: str) -> str:
        if name not in self:
            self.add(name, value)
        return self.get(name) or ""

    def remove(self, name: str) -> int:
        """Drop all fields called `name`; returns how many there were."""
        lower = name.lower()
        before = len(self._items)
        self._items = [(n, v) for n, v in self._items if n.lower() != lower]
        return before - len(self._items)

    def get_all(self, name: str) -> list[str]:
        lower = name.lower()
        return [v for n, v in self._items if n.lower() == lower]

    def get(self, name: str, default: str | None = None) -> str | None:
        values = self.get_all(name)
        if not values:
            return default
        if name.lower() == "set-cookie":
            raise HeaderError("Set-Cookie cannot be combined; use get_all()")
        return ", ".join(values)

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value: str) -> None:
        self.set(name, value)

    def __delitem__(self, name: str) -> None:
        if not self.remove(name):
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n.lower() == name.lower() for n, _ in self._items)

    def __iter__(self) -> Iterator[str]:
        seen: set[str] = set()
        for name, _ in self._items:
            if name.lower() not in seen:
                seen.add(name.lower())
                yield name

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Headers):
            return NotImplemented
        return [(n.lower(), v) for n, v in self._items] == [(n.lower(), v) for n, v in other._items]

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def copy(self) -> Headers:
        return Headers(self._items)

    @classmethod
    def parse(cls, block: str | bytes) -> Headers:
        """Parse a raw header block (the lines after the request/status line, up to the blank line).

        Obsolete line folding (continuation lines starting with whitespace) is unfolded into one space.
        """
        if isinstance(block, bytes):
            block = block.decode("latin-1")
        headers = cls()
        name: str | None = None
        value = ""
        for line in block.replace("\r\n", "\n").split("\n"):
            if not line:
                continue
            if line[0] in " \t":
                if name is None:
                    raise HeaderError("continuation line before the first header")
                value += " " + line.strip()
                continue
            if name is not None:
                headers.add(name, value)
            head, colon, rest = line.partition(":")
            if not colon or head != head.strip():
                raise HeaderError(f"malformed header line {line!r}")
            name, value = head, rest.strip()
        if name is not None:
            headers.add(name, value)
        return headers

    def to_wire(self) -> bytes:
        """Serialise as a CRLF-separated block ending with the blank line."""
        lines = "".join(f"{name}: {value}\r\n" for name, value in self._items)
        return (lines + "\r\n").encode("latin-1")


# --- parameters, media types ------------------------------------------------------------------------


def _parse_params(text: str) -> dict[str, str]:
    """`; key=value; key="quoted"` parameters: names lowercased, values unquoted. Bare names map to ''."""
    params: dict[str, str] = {}
    for piece in text.split(";"):
        key, eq, value = piece.partition("=")
        key = key.strip().lower()
        if not key:
            continue
        params[key] = unquote(value) if eq else ""
    return params


@dataclass(frozen=True)
class MediaType:
    type: str
    subtype: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def essence(self) -> str:
        return f"{self.type}/{self.subtype}"

    @property
    def charset(self) -> str | None:
        return self.params.get("charset")

    def matches(self, other: MediaType) -> bool:
        """Whether `other` falls under this (possibly wildcard) type, ignoring parameters."""
        if self.type != "*" and self.type != other.type:
            return False
        return self.subtype == "*" or self.subtype == other.subtype

    def __str__(self) -> str:
        params = "".join(f"; {k}={quote(v)}" for k, v in self.params.items())
        return f"{self.essence}{params}"


def parse_content_type(value: str) -> MediaType:
    """`text/html; charset=UTF-8` -> MediaType('text', 'html', {'charset': 'UTF-8'})."""
    essence, _, rest = value.partition(";")
    main, slash, sub = essence.strip().lower().partition("/")
    if not slash or not is_token(main) or not is_token(sub):
        raise HeaderError(f"invalid media type {value!r}")
    if rest.count('"') % 2:
        raise HeaderError(f"unbalanced quotes in {value!r}")
    return MediaType(main, sub, _parse_params(rest))


# --- content negotiation -------------------------------------------------------------------------


@dataclass(frozen=True)
class AcceptItem:
    media_type: MediaType
    quality: float

    @property
    def specificity(self) -> int:
        """More specific ranges win ties: type/subtype;param > type/subtype > type/* > */*."""
        if self.media_type.type == "*":
            return 0
        if self.media_type.subtype == "*":
            return 1
        return 2 + len(self.media_type.params)


def _quality(text: str) -> float:
    try:
        q = float(text)
    except ValueError:
        raise HeaderError(f"invalid quality value {text!r}") from None
    if not 0 <= q <= 1:
        raise HeaderError(f"quality {q} outside 0..1")
    return q


def parse_accept(value: str) -> list[AcceptItem]:
    """An Accept header, best first (by quality, then specificity, then original order)."""
    items = []
    for position, piece in enumerate(split_list(value)):
        media = parse_content_type(piece)
        params = dict(media.params)
        quality = _quality(params.pop("q")) if "q" in params else 1.0
        items.append((position, AcceptItem(MediaType(media.type, media.subtype, params), quality)))
    items.sort(key=lambda pair: (-pair[1].quality, -pair[1].specificity, pair[0]))
    return [item for _, item in items]


def negotiate(accept: str | None, available: list[str]) -> str | None:
    """Pick the best of `available` media types for an Accept header; None when nothing is acceptable.

    Each offer takes the quality of the most specific range that matches it; offers keep their
    order as a tie-break, so list the server's preferred type first.
    """
    if not available:
        return None
    if not accept:
        return available[0]
    ranges = parse_accept(accept)
    best: tuple[float, int] | None = None
    choice = None
    for index, offer in enumerate(available):
        offered = parse_content_type(offer)
        matching = [r for r in ranges if r.media_type.matches(offered)]
        if not matching:
            continue
        quality = max(matching, key=lambda r: r.specificity).quality
        if quality > 0 and (best is None or (quality, -index) > best):
            best, choice = (quality, -index), offer
    return choice


# --- caching -------------------------------------------------------------------------------------


@dataclass
class CacheControl:
    directives: dict[str, str | None]

    def __contains__(self, name: str) -> bool:
        return name.lower() in self.directives

    def seconds(self, name: str) -> int | None:
        """A delta-seconds directive such as max-age; None when absent or not a number."""
        value = self.directives.get(name.lower())
        return int(value) if value is not None and value.isdigit() else None

    @property
    def cacheable(self) -> bool:
        return "no-store" not in self and "private" not in self

    def __str__(self) -> str:
        return ", ".join(k if v is None else f"{k}={quote(v)}" for k, v in self.directives.items())


def parse_cache_control(value: str) -> CacheControl:
    """`max-age=60, no-cache="Set-Cookie"` -> {'max-age': '60', 'no-cache': 'Set-Cookie'}."""
    directives: dict[str, str | None] = {}
    for piece in split_list(value):
        name, eq, arg = piece.partition("=")
        directives[name.strip().lower()] = unquote(arg) if eq else None
    return CacheControl(directives)


def parse_etags(value: str) -> list[str] | None:
    """An If-None-Match / If-Match list; None stands for '*' (any entity)."""
    if value.strip() == "*":
        return None
    tags = []
    for piece in split_list(value):
        weak = piece.startswith("W/")
        opaque = piece[2:] if weak else piece
        if len(opaque) < 2 or opaque[0] != '"' or opaque[-1] != '"':
            raise HeaderError(f"invalid entity tag {piece!r}")
        tags.append(("W/" if weak else "") + opaque)
    return tags


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Weak comparison, as If-None-Match uses: W/"x" matches "x"."""
    tags = parse_etags(if_none_match)
    if tags is None:
        return True
    strip = lambda tag: tag[2:] if tag.startswith("W/") else tag  # noqa: E731
    return strip(etag) in {strip(t) for t in tags}


def parse_http_date(value: str) -> dt.datetime:
    """An IMF-fixdate (or the obsolete RFC 850 / asctime forms) as an aware UTC datetime."""
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        raise HeaderError(f"invalid HTTP date {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc)


def format_http_date(moment: dt.datetime) -> str:
    if moment.tzinfo is None:
        raise HeaderError("HTTP dates need an aware datetime")
    return format_datetime(moment.astimezone(dt.timezone.utc), usegmt=True)


# --- downloads and ranges ------------------------------------------------------------------------


@dataclass(frozen=True)
class ContentDisposition:
    disposition: str
    params: dict[str, str]

    @property
    def filename(self) -> str | None:
        """The filename, preferring the RFC 8187 `filename*` form and dropping any directory part."""
        name = self.params.get("filename*")
        if name is not None:
            charset, _, rest = name.partition("'")
            _, _, encoded = rest.partition("'")
            try:
                name = percent_decode(encoded, encoding=charset or "utf-8", errors="strict")
            except (LookupError, UnicodeDecodeError):
                name = None
        if name is None:
            name = self.params.get("filename")
        if name is None:
            return None
        return name.replace("\\", "/").rsplit("/", 1)[-1] or None

    @property
    def is_attachment(self) -> bool:
        return self.disposition == "attachment"


def parse_content_disposition(value: str) -> ContentDisposition:
    kind, _, rest = value.partition(";")
    kind = kind.strip().lower()
    if not is_token(kind):
        raise HeaderError(f"invalid disposition {value!r}")
    return ContentDisposition(kind, _parse_params(rest))


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int  # inclusive, as in Content-Range

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self, total: int) -> str:
        return f"bytes {self.start}-{self.end}/{total}"


def parse_range(value: str, total: int) -> list[ByteRange]:
    """Resolve a `Range: bytes=...` header against a body of `total` bytes.

    Suffix ranges (`-500`) count from the end; open ranges (`500-`) run to the end; ranges past the
    end are clamped. Raises HeaderError for syntax errors and when no range is satisfiable (416).
    """
    unit, eq, spec = value.partition("=")
    if not eq or unit.strip().lower() != "bytes":
        raise HeaderError(f"unsupported range unit in {value!r}")
    ranges = []
    for piece in split_list(spec):
        first, dash, last = piece.partition("-")
        first, last = first.strip(), last.strip()
        if not dash or (first and not first.isdigit()) or (last and not last.isdigit()) or not (first or last):
            raise HeaderError(f"malformed byte range {piece!r}")
        if not first:
            length = int(last)
            if length == 0 or total == 0:
                continue
            ranges.append(ByteRange(max(0, total - length), total - 1))
            continue
        start = int(first)
        end = int(last) if last else total - 1
        if end < start:
            raise HeaderError(f"byte range {piece!r} ends before it starts")
        if start >= total:
            continue
        ranges.append(ByteRange(start, min(end, total - 1)))
    if not ranges:
        raise HeaderError(f"range not satisfiable for {total} bytes: {value!r}")
    return ranges


# --- cookies, links, credentials -------------------------------------------------------------------


def parse_cookie_header(value: str) -> dict[str, str]:
    """A request `Cookie:` header. The first occurrence of a name wins, as browsers send the most
    specific cookie first."""
    cookies: dict[str, str] = {}
    for piece in value.split(";"):
        name, eq, val = piece.partition("=")
        name = name.strip()
        if not eq or not name:
            continue
        cookies.setdefault(name, unquote(val))
    return cookies


def parse_links(value: str) -> dict[str, str]:
    """A `Link:` header as rel -> URI (`<https://api/x?page=2>; rel="next"` -> {'next': ...}).

    A link with several space-separated relations is listed under each of them.
    """
    links: dict[str, str] = {}
    for piece in split_list(value):
        target, _, rest = piece.partition(";")
        target = target.strip()
        if not (target.startswith("<") and target.endswith(">")):
            raise HeaderError(f"link target must be in <...>: {piece!r}")
        rels = _parse_params(rest).get("rel", "")
        for rel in rels.lower().split():
            links.setdefault(rel, target[1:-1])
    return links


def parse_authorization(value: str) -> tuple[str, str | tuple[str, str]]:
    """`Basic <base64>` -> ('basic', (user, password)); `Bearer <token>` -> ('bearer', token).

    Other schemes come back as (scheme, raw credentials).
    """
    scheme, _, credentials = value.strip().partition(" ")
    scheme = scheme.lower()
    credentials = credentials.strip()
    if not scheme or not credentials:
        raise HeaderError("authorization needs a scheme and credentials")
    if scheme == "basic":
        try:
            decoded = base64.b64decode(credentials, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise HeaderError("invalid Basic credentials") from None
        user, colon, password = decoded.partition(":")
        if not colon:
            raise HeaderError("Basic credentials need user:password")
        return scheme, (user, password)
    return scheme, credentials
