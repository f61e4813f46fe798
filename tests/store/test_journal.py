"""The tuning journal in SQLite: originals kept once per session, ops and their outcome, events."""

import json
import sqlite3

from app.shapes.tuning import Restored
from app.store import journal
from app.tuning.planning.knob_plan import KnobChange


def change(key: str, original: str, desired: str) -> KnobChange:
    knob, _, target = key.partition("@")
    return KnobChange(key, knob, target or None, "entries", original, desired, "test")


def applied(
    conn: sqlite3.Connection, preset: str, arrays: list[str], changes: list[KnobChange], now: float
) -> tuple[int, int]:
    """An apply journaled from start to finish: (session id, op id)."""
    session, op = journal.begin_apply(conn, preset, arrays, changes, now)
    journal.finish_apply(conn, session, op, preset, arrays, changes, now + 1)
    return session, op


def test_a_second_apply_keeps_the_first_originals(conn: sqlite3.Connection) -> None:
    session, first = applied(
        conn, "balanced", ["md2"], [change("stripe_cache_size@md2", "256", "4096")], 10.0
    )
    again, second = applied(
        conn, "boost", ["md3"], [change("stripe_cache_size@md2", "4096", "16384")], 20.0
    )
    assert again == session and second != first
    (knob,) = journal.session_knobs(conn, session)
    assert (knob.original, knob.desired) == ("256", "16384")
    open_session = journal.open_session(conn)
    assert open_session is not None and open_session.preset == "boost"
    assert open_session.arrays == ["md2", "md3"]
    assert journal.unfinished_ops(conn) == []


def test_an_apply_left_in_progress_is_unfinished_until_a_revert_closes_it(
    conn: sqlite3.Connection,
) -> None:
    session, _ = journal.begin_apply(
        conn, "boost", ["md2"], [change("read_ahead_kb@md2", "384", "32768")], 10.0
    )
    assert len(journal.unfinished_ops(conn)) == 1
    op = journal.begin_revert(conn, session, "mdboost started after a crash", 20.0)
    journal.finish_revert(
        conn,
        session,
        op,
        "mdboost started after a crash",
        [],
        [],
        20.0,
        21.0,
        ["read_ahead_kb@md2"],
    )
    assert journal.unfinished_ops(conn) == []
    assert journal.open_session(conn) is None
    assert journal.session_knobs(conn, session) == []  # gone: it leaves the session


def test_a_failed_revert_leaves_the_session_open(conn: sqlite3.Connection) -> None:
    session, _ = applied(
        conn, "boost", ["md2"], [change("read_ahead_kb@md2", "384", "32768")], 10.0
    )
    journal.finish_revert(conn, session, None, "requested", [], ["EINVAL"], 20.0, 21.0)
    assert journal.open_session(conn) is not None
    assert len(journal.session_knobs(conn, session)) == 1


def test_a_revert_journals_what_it_put_back_as_the_api_shows_it(conn: sqlite3.Connection) -> None:
    changes = [
        change("stripe_cache_size@md2", "256", "4096"),
        change("read_ahead_kb@md3", "384", "32768"),
    ]
    session, _ = applied(conn, "boost", ["md2", "md3"], changes, 10.0)
    op = journal.begin_revert(conn, session, "requested", 20.0)
    put_back = [Restored(key="stripe_cache_size@md2", from_="4096", to="256")]
    journal.finish_revert(
        conn, session, op, "requested", put_back, [], 20.0, 21.0, ["read_ahead_kb@md3"]
    )
    (kept,) = conn.execute("SELECT changes FROM tuning_ops WHERE id = ?", (op,)).fetchone()
    assert json.loads(kept) == [
        {"key": "stripe_cache_size@md2", "from": "4096", "to": "256"},
        {"key": "read_ahead_kb@md3", "gone": True},
    ]
    assert journal.open_session(conn) is None
