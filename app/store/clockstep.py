"""Shift what was recorded before a wall-clock step onto the new wall time.

The sampler calls shift() in the transaction that stores the tick which saw the step, before it
inserts that tick's rows. What moves is what the present is measured against: every sample and
event of the runs still open, and those this process wrote (one monotonic timeline), the open
runs' and the open tuning session's start (the boost timer), effects still being measured, and the
notifications still waiting (their backoff). Finished history keeps the times it was recorded at.
"""

import sqlite3
from dataclasses import dataclass


@dataclass(frozen=True)
class Segment:
    """Rows above these ids were written by this process: on its monotonic timeline."""

    sample_id: int
    event_id: int


def segment(conn: sqlite3.Connection) -> Segment:
    samples = conn.execute("SELECT COALESCE(MAX(id), 0) FROM samples").fetchone()[0]
    events = conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0]
    return Segment(int(samples), int(events))


_OPEN_RUNS = "SELECT id FROM runs WHERE finished IS NULL"


def shift(conn: sqlite3.Connection, delta: float, since: Segment) -> None:
    """Add `delta` seconds to the times recorded before the step; the caller holds a write
    transaction."""
    d = {"d": delta, "sample_id": since.sample_id, "event_id": since.event_id}
    conn.execute(
        f"UPDATE samples SET ts = ts + :d WHERE id > :sample_id OR run_id IN ({_OPEN_RUNS})", d
    )
    conn.execute(
        f"UPDATE events SET ts = ts + :d WHERE id > :event_id OR run_id IN ({_OPEN_RUNS})", d
    )
    conn.execute("UPDATE runs SET started = started + :d WHERE finished IS NULL", d)
    conn.execute("UPDATE tuning_sessions SET started = started + :d WHERE ended IS NULL", d)
    conn.execute(
        "UPDATE tuning_effects SET applied_at = applied_at + :d WHERE measured_at IS NULL", d
    )
    conn.execute(
        "UPDATE notify_outbox SET created = created + :d, next_attempt = next_attempt + :d "
        "WHERE state = 'pending'",
        d,
    )
