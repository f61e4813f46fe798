"""The outbox in SQLite: one row per event per destination, delivered in order, retried, folded.

Rows are inserted in the transaction that saves the detector's state (notifier.py), so an event
is either queued for every destination or, after a crash, detected again. A row is marked
delivered in its own transaction right after the receiver took it: a crash between the two
re-sends that one message once after the restart (the receiver-side ids in senders.py let it be
recognised); nothing else is ever sent twice, and the UNIQUE dedup key makes one event one message.
"""

import json
import sqlite3
from dataclasses import dataclass

from app.notify.senders import Message, Priority
from app.store import db

RATE_WINDOW_S = 60.0
SUMMARY_LINES = 30
_PRIORITY_ORDER: tuple[Priority, ...] = ("min", "low", "default", "high", "urgent")


@dataclass(frozen=True)
class Job:
    """The head of one destination's queue, due now."""

    row_id: int
    destination_id: int
    attempts: int
    message: Message


def enqueue(
    conn: sqlite3.Connection,
    message: Message,
    destination_ids: list[int],
    created: float,
    wall_now: float,
) -> int:
    """Queue `message` for each destination, inside the caller's transaction; a dedup key that is
    already queued for a destination is ignored. Returns the rows added."""
    added = 0
    for destination_id in destination_ids:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO notify_outbox"
            " (destination_id, dedup_key, kind, created, message, next_attempt)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                destination_id,
                message.key,
                message.kind,
                created,
                json.dumps(message.to_json()),
                wall_now,
            ),
        )
        added += cursor.rowcount
    return added


def heads(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """The oldest pending row of each destination in use: only a head is ever attempted, so each
    destination receives its messages in the order they were queued."""
    return conn.execute(
        "SELECT o.* FROM notify_destinations d JOIN notify_outbox o ON o.id = ("
        "  SELECT MIN(id) FROM notify_outbox WHERE destination_id = d.id AND state = 'pending')"
        " WHERE d.removed IS NULL ORDER BY o.id"
    ).fetchall()


def due_jobs(conn: sqlite3.Connection, wall_now: float, max_per_minute: int) -> list[Job]:
    """Heads whose time has come. A destination that took `max_per_minute` messages in the last
    minute gets its whole backlog folded into one summary, sent when the minute allows."""
    jobs = []
    for head in heads(conn):
        if head["next_attempt"] > wall_now:
            continue
        sent = recent_deliveries(conn, head["destination_id"], wall_now)
        if len(sent) >= max_per_minute:
            allowed_at = sent[0] + RATE_WINDOW_S
            if head["kind"] != "summary":
                fold(conn, head["destination_id"], head["created"], allowed_at)
            else:
                with db.write_transaction(conn):
                    conn.execute(
                        "UPDATE notify_outbox SET next_attempt = ? WHERE id = ?",
                        (allowed_at, head["id"]),
                    )
            continue
        message = Message.from_json(json.loads(head["message"]))
        jobs.append(Job(head["id"], head["destination_id"], head["attempts"], message))
    return jobs


def recent_deliveries(
    conn: sqlite3.Connection, destination_id: int, wall_now: float
) -> list[float]:
    rows = conn.execute(
        "SELECT delivered FROM notify_outbox WHERE destination_id = ? AND delivered > ?"
        " ORDER BY delivered",
        (destination_id, wall_now - RATE_WINDOW_S),
    )
    return [float(r[0]) for r in rows]


def fold(conn: sqlite3.Connection, destination_id: int, created: float, send_at: float) -> int:
    """Replace every pending message of a destination by one summary listing them, in place."""
    with db.write_transaction(conn):
        held = conn.execute(
            "SELECT id, message FROM notify_outbox"
            " WHERE destination_id = ? AND state = 'pending' ORDER BY id",
            (destination_id,),
        ).fetchall()
        messages = [Message.from_json(json.loads(r["message"])) for r in held]
        summary = summary_message(messages, key=f"summary:{held[0]['id']}")
        summary_id = conn.execute(
            "INSERT INTO notify_outbox"
            " (destination_id, dedup_key, kind, created, message, next_attempt)"
            " VALUES (?, ?, 'summary', ?, ?, ?)",
            (destination_id, summary.key, created, json.dumps(summary.to_json()), send_at),
        ).lastrowid
        conn.executemany(
            "UPDATE notify_outbox SET state = 'summarised', summary_id = ? WHERE id = ?",
            [(summary_id, r["id"]) for r in held],
        )
    assert summary_id is not None
    return summary_id


def summary_message(messages: list[Message], key: str) -> Message:
    lines = [f"- {m.title}" for m in messages[:SUMMARY_LINES]]
    if len(messages) > SUMMARY_LINES:
        lines.append(f"- … and {len(messages) - SUMMARY_LINES} more")
    priority = max((m.priority for m in messages), key=_PRIORITY_ORDER.index)
    return Message(
        key=key,
        kind="summary",
        title=f"mdboost: {len(messages)} messages held back (too many in a minute)",
        body="\n".join(lines),
        priority=priority,
        tags=["package"],
        click=next((m.click for m in messages if m.click), None),
    )


def mark_delivered(conn: sqlite3.Connection, row_id: int, wall_now: float) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE notify_outbox SET state = 'delivered', delivered = ?,"
            " attempts = attempts + 1, last_error = NULL WHERE id = ? AND state = 'pending'",
            (wall_now, row_id),
        )


def mark_failed(
    conn: sqlite3.Connection,
    row_id: int,
    error: str,
    wall_now: float,
    first_retry_s: float,
    max_retry_s: float,
) -> float:
    """Keep the row at the head of its queue and retry after an exponential backoff."""
    with db.write_transaction(conn):
        attempts = conn.execute(
            "UPDATE notify_outbox SET attempts = attempts + 1, last_error = ?"
            " WHERE id = ? RETURNING attempts",
            (error[:500], row_id),
        ).fetchone()[0]
        delay = min(max_retry_s, first_retry_s * 2.0 ** min(int(attempts) - 1, 30))
        conn.execute(
            "UPDATE notify_outbox SET next_attempt = ? WHERE id = ?", (wall_now + delay, row_id)
        )
    return delay
