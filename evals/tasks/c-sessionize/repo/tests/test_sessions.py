from datetime import datetime, timedelta

import pytest

from clickstream import Event, SessionTracker, parse_events, sessionize, summarize

LOG = """
# a long, active visit: one page every 10 minutes for an hour
2024-03-01T10:00:00 ann /
2024-03-01T10:10:00 ann /pricing
2024-03-01T10:20:00 ann /docs
2024-03-01T10:30:00 ann /docs/install
2024-03-01T10:40:00 ann /docs/api
2024-03-01T10:50:00 ann /signup
2024-03-01T11:00:00 ann /welcome
2024-03-01T10:05:00 bob /blog
2024-03-01T10:50:00 bob /blog/2
"""


def t(hh, mm):
    return datetime(2024, 3, 1, hh, mm)


def test_parse_events():
    events = parse_events(LOG)
    assert len(events) == 9 and events[0] == Event("ann", t(10, 0), "/")
    with pytest.raises(ValueError, match="line 2"):
        parse_events("2024-03-01T10:00:00 ann /\nnot a line")


def test_an_active_visit_is_one_session():
    sessions = [s for s in sessionize(parse_events(LOG)) if s.user == "ann"]
    assert len(sessions) == 1
    assert sessions[0].duration == timedelta(hours=1) and len(sessions[0].pages) == 7


def test_a_long_pause_starts_a_new_session():
    bob = [s for s in sessionize(parse_events(LOG)) if s.user == "bob"]
    assert [(s.start, s.end) for s in bob] == [(t(10, 5), t(10, 5)), (t(10, 50), t(10, 50))]
    assert all(s.bounced for s in bob)


def test_exactly_the_gap_still_counts_as_the_same_session():
    events = [Event("cy", t(9, 0), "/a"), Event("cy", t(9, 30), "/b"), Event("cy", t(10, 1), "/c")]
    assert [s.pages for s in sessionize(events)] == [["/a", "/b"], ["/c"]]


def test_summary():
    stats = summarize(sessionize(parse_events(LOG)))
    assert stats["sessions"] == 3 and stats["users"] == 2
    assert stats["bounce_rate"] == pytest.approx(2 / 3)
    assert stats["avg_duration_s"] == pytest.approx(1200)
    assert summarize([])["sessions"] == 0


def test_tracker_keeps_an_active_visit_open():
    tracker = SessionTracker()
    closed = [tracker.add(e) for e in parse_events(LOG) if e.user == "ann"]
    assert closed == [None] * 7
    assert tracker.expire(t(11, 20)) == []
    (session,) = tracker.expire(t(11, 31))
    assert session.start == t(10, 0) and session.end == t(11, 0)


def test_tracker_returns_the_previous_session_after_a_pause():
    tracker = SessionTracker()
    assert tracker.add(Event("bob", t(10, 5), "/blog")) is None
    previous = tracker.add(Event("bob", t(10, 50), "/blog/2"))
    assert previous.pages == ["/blog"] and tracker.open["bob"].pages == ["/blog/2"]
    assert [s.pages for s in tracker.flush()] == [["/blog/2"]] and tracker.open == {}


def test_tracker_rejects_out_of_order_events():
    tracker = SessionTracker()
    tracker.add(Event("ann", t(10, 0), "/"))
    with pytest.raises(ValueError):
        tracker.add(Event("ann", t(9, 59), "/x"))


def test_gap_must_be_positive():
    with pytest.raises(ValueError):
        sessionize([], gap=timedelta(0))
    with pytest.raises(ValueError):
        SessionTracker(gap=timedelta(minutes=-1))
