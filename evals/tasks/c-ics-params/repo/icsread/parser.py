"""RFC 5545 reading: unfold lines, split content lines, build the component tree, map it to the model.

A content line is  NAME *(";" PARAM "=" VALUE *("," VALUE)) ":" VALUE . Parameter values may be quoted, and
a quoted value may contain ":", ";" and "," (e.g. CN="Doe, Jane" or ALTREP="cid:part1@example.org").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

from icsread.model import Alarm, Attendee, Calendar, Event

_NAME = re.compile(r"^[A-Za-z0-9-]+$")
_DURATION = re.compile(
    r"^(?P<sign>[+-])?P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$"
)
_TEXT_ESCAPES = {"\\\\": "\\", "\\;": ";", "\\,": ",", "\\n": "\n", "\\N": "\n"}
_ESCAPE = re.compile(r"\\[\\;,nN]")


class ParseError(ValueError):
    def __init__(self, message: str, line_number: int | None = None):
        self.line_number = line_number
        super().__init__(f"line {line_number}: {message}" if line_number else message)


# ---------------------------------------------------------------- low-level text helpers


def unfold_lines(text: str) -> list[tuple[int, str]]:
    """Logical lines with the physical number they start on; a line starting with a space or tab
    continues the previous one (exactly that one character is removed)."""
    lines: list[tuple[int, str]] = []
    for number, raw in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        if raw[:1] in (" ", "\t") and lines:
            start, previous = lines[-1]
            lines[-1] = (start, previous + raw[1:])
        elif raw.strip():
            lines.append((number, raw))
    return lines


def unescape_text(value: str) -> str:
    r"""TEXT values: \\ \; \, \n in one pass (so "\\n" stays a backslash followed by n)."""
    return _ESCAPE.sub(lambda m: _TEXT_ESCAPES[m.group(0)], value)


def split_text_list(value: str) -> list[str]:
    """A comma-separated list of TEXT values; escaped commas do not separate."""
    items, current, i = [], [], 0
    while i < len(value):
        if value[i] == "\\" and i + 1 < len(value):
            current.append(value[i:i + 2])
            i += 2
            continue
        if value[i] == ",":
            items.append(unescape_text("".join(current)))
            current = []
        else:
            current.append(value[i])
        i += 1
    items.append(unescape_text("".join(current)))
    return [item for item in items if item]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


# ---------------------------------------------------------------- content lines


@dataclass
class ContentLine:
    name: str
    params: dict[str, list[str]]
    value: str
    line_number: int | None = None

    def param(self, key: str, default: str | None = None) -> str | None:
        values = self.params.get(key.upper())
        return values[0] if values else default


def parse_content_line(line: str, line_number: int | None = None) -> ContentLine:
    head, colon, value = line.partition(":")
    if not colon:
        raise ParseError(f"no ':' in content line {line!r}", line_number)
    name, *raw_params = head.split(";")
    if not _NAME.match(name):
        raise ParseError(f"bad property name {name!r}", line_number)
    params: dict[str, list[str]] = {}
    for raw in raw_params:
        key, equals, raw_values = raw.partition("=")
        if not equals or not _NAME.match(key):
            raise ParseError(f"bad parameter {raw!r} in {name}", line_number)
        values = [_unquote(v) for v in raw_values.split(",")]
        params.setdefault(key.upper(), []).extend(values)
    return ContentLine(name.upper(), params, value, line_number)


# ---------------------------------------------------------------- values


def parse_date_value(value: str, params: dict[str, list[str]] | None = None) -> date | datetime:
    """DATE (20240105) or DATE-TIME (20240105T093000, with Z for UTC); a TZID leaves the time naive."""
    params = params or {}
    kind = (params.get("VALUE") or ["DATE-TIME" if "T" in value else "DATE"])[0]
    try:
        if kind == "DATE":
            return datetime.strptime(value, "%Y%m%d").date()
        if value.endswith("Z"):
            return datetime.strptime(value[:-1], "%Y%m%dT%H%M%S").replace(tzinfo=timezone.utc)
        return datetime.strptime(value, "%Y%m%dT%H%M%S")
    except ValueError as exc:
        raise ParseError(f"bad {kind} value {value!r}") from exc


def parse_date_list(value: str, params: dict[str, list[str]] | None = None) -> list[date | datetime]:
    return [parse_date_value(v, params) for v in value.split(",") if v]


def parse_duration(value: str) -> timedelta:
    """RFC 5545 DURATION: P1W, P2DT3H, -PT15M, PT0S."""
    match = _DURATION.match(value.strip())
    if not match or value.strip() in ("P", "PT", "-P", "+P"):
        raise ParseError(f"bad duration {value!r}")
    parts = {k: int(v) for k, v in match.groupdict().items() if v and k != "sign"}
    delta = timedelta(**parts)
    return -delta if match["sign"] == "-" else delta


def parse_rrule(value: str) -> dict[str, str]:
    """FREQ=WEEKLY;BYDAY=MO,WE -> {'FREQ': 'WEEKLY', 'BYDAY': 'MO,WE'} (kept as text, not expanded)."""
    rule: dict[str, str] = {}
    for part in value.split(";"):
        key, equals, item = part.partition("=")
        if not equals:
            raise ParseError(f"bad RRULE part {part!r}")
        rule[key.upper()] = item
    if "FREQ" not in rule:
        raise ParseError("RRULE without FREQ")
    return rule


def parse_cal_address(line: ContentLine) -> Attendee:
    """ATTENDEE / ORGANIZER: a mailto: URI plus CN, ROLE, PARTSTAT, RSVP, DELEGATED-FROM parameters."""
    address = line.value.strip()
    if address.lower().startswith("mailto:"):
        address = address[len("mailto:"):]
    delegated = tuple(v.removeprefix("mailto:") for v in line.params.get("DELEGATED-FROM", []))
    return Attendee(
        email=address,
        name=line.param("CN"),
        role=line.param("ROLE", "REQ-PARTICIPANT") or "REQ-PARTICIPANT",
        status=line.param("PARTSTAT", "NEEDS-ACTION") or "NEEDS-ACTION",
        rsvp=(line.param("RSVP", "FALSE") or "").upper() == "TRUE",
        delegated_from=delegated,
    )


# ---------------------------------------------------------------- components


@dataclass
class Component:
    name: str
    lines: list[ContentLine] = field(default_factory=list)
    children: list[Component] = field(default_factory=list)

    def first(self, name: str) -> ContentLine | None:
        return next((line for line in self.lines if line.name == name), None)

    def all(self, name: str) -> list[ContentLine]:
        return [line for line in self.lines if line.name == name]

    def value(self, name: str, default: str = "") -> str:
        line = self.first(name)
        return line.value if line else default

    def walk(self, name: str) -> list[Component]:
        found = [self] if self.name == name else []
        for child in self.children:
            found.extend(child.walk(name))
        return found


def parse_component(text: str) -> Component:
    """The outermost BEGIN..END block of `text` as a tree of components."""
    stack: list[Component] = []
    root: Component | None = None
    for number, raw in unfold_lines(text):
        line = parse_content_line(raw, number)
        if line.name == "BEGIN":
            component = Component(line.value.upper())
            if stack:
                stack[-1].children.append(component)
            elif root is not None:
                raise ParseError("content after the end of the calendar", number)
            stack.append(component)
        elif line.name == "END":
            if not stack or stack[-1].name != line.value.upper():
                expected = stack[-1].name if stack else "nothing"
                raise ParseError(f"END:{line.value} but {expected} is open", number)
            root = stack.pop()
        elif not stack:
            raise ParseError(f"{line.name} outside any component", number)
        else:
            stack[-1].lines.append(line)
    if stack:
        raise ParseError(f"{stack[-1].name} is never closed")
    if root is None:
        raise ParseError("no BEGIN line")
    return root


# ---------------------------------------------------------------- the model


def _alarm(component: Component) -> Alarm:
    trigger_line = component.first("TRIGGER")
    if trigger_line is None:
        raise ParseError("VALARM without TRIGGER")
    trigger: timedelta | datetime
    if trigger_line.param("VALUE") == "DATE-TIME":
        trigger = parse_date_value(trigger_line.value, trigger_line.params)  # type: ignore[assignment]
    else:
        trigger = parse_duration(trigger_line.value)
    description = component.first("DESCRIPTION")
    return Alarm(
        action=component.value("ACTION", "DISPLAY").upper(),
        trigger=trigger,
        description=unescape_text(description.value) if description else None,
        related_to_end=trigger_line.param("RELATED") == "END",
    )


def _event(component: Component) -> Event:
    start_line = component.first("DTSTART")
    uid = component.value("UID")
    if start_line is None or not uid:
        raise ParseError("VEVENT needs UID and DTSTART")
    start = parse_date_value(start_line.value, start_line.params)
    event = Event(uid=uid, start=start, tzid=start_line.param("TZID"))
    end_line, duration = component.first("DTEND"), component.first("DURATION")
    if end_line is not None:
        event.end = parse_date_value(end_line.value, end_line.params)
    elif duration is not None:
        event.end = start + parse_duration(duration.value)
    elif event.all_day:
        event.end = start + timedelta(days=1)
    event.summary = unescape_text(component.value("SUMMARY"))
    event.description = unescape_text(component.value("DESCRIPTION"))
    event.location = unescape_text(component.value("LOCATION"))
    event.status = component.value("STATUS", "CONFIRMED").upper()
    event.url = component.value("URL") or None
    organizer = component.first("ORGANIZER")
    event.organizer = parse_cal_address(organizer) if organizer else None
    event.attendees = [parse_cal_address(line) for line in component.all("ATTENDEE")]
    for line in component.all("CATEGORIES"):
        event.categories.extend(split_text_list(line.value))
    rrule = component.first("RRULE")
    event.rrule = parse_rrule(rrule.value) if rrule else {}
    for line in component.all("EXDATE"):
        event.exdates.extend(parse_date_list(line.value, line.params))
    event.alarms = [_alarm(child) for child in component.children if child.name == "VALARM"]
    if event.end is not None and event.end < event.start:
        raise ParseError(f"event {uid} ends before it starts")
    return event


def read_calendar(text: str) -> Calendar:
    root = parse_component(text)
    if root.name != "VCALENDAR":
        raise ParseError(f"expected VCALENDAR, got {root.name}")
    calendar = Calendar(prodid=root.value("PRODID"), version=root.value("VERSION", "2.0"),
                        name=unescape_text(root.value("X-WR-CALNAME")) or None)
    calendar.events = [_event(child) for child in root.children if child.name == "VEVENT"]
    return calendar
