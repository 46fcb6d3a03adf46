from icsread.model import Alarm, Attendee, Calendar, Event
from icsread.parser import (
    Component,
    ContentLine,
    ParseError,
    parse_component,
    parse_content_line,
    read_calendar,
    unfold_lines,
)

__all__ = ["Alarm", "Attendee", "Calendar", "Component", "ContentLine", "Event", "ParseError",
           "parse_component", "parse_content_line", "read_calendar", "unfold_lines"]
