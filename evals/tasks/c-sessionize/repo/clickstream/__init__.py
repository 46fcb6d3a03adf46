from clickstream.events import Event, parse_events
from clickstream.sessions import Session, SessionTracker, sessionize, summarize

__all__ = ["Event", "Session", "SessionTracker", "parse_events", "sessionize", "summarize"]
