"""The outbox in SQLite: one row per event per destination, delivered in order, retried, folded.

Rows are inserted in the transaction that saves the detector's state (notifier.py), so an event
is either queued for every destination or, after a crash, detected again. A row is marked
delivered in its own transaction right after the receiver took it: a crash between the two
re-sends that one message once after the restart (the receiver-side ids in senders.py let it be
recognised); nothing else is ever sent twice, and the UNIQUE dedup key makes one event one message.
"""

import json
from dataclasses import dataclass

from app.notify.senders import Message, Priority
from app.records import QueuedMessage
from app.store import db
from app.store import notify as stored

RATE_WINDOW_S = 60.0
SUMMARY_LINES = 30
_PRIORITY_ORDER: tuple[Priority, ...] = ("min", "low", "default", "high", "urgent")


@dataclass(frozen=True)
class DueMessage:
    """The head of one destination's queue, due now."""

    row_id: int
    destination_id: int
    attempts: int
    message: Message


def enqueue(
    conn: db.Connection,
    message: Message,
    destination_ids: list[int],
    created: float,
    wall_now: float,
) -> int:
    """Queue `message` for each destination, inside the caller's transaction; a dedup key that is
    already queued for a destination is ignored. Returns the rows added."""
    text = json.dumps(message.to_json())
    return sum(
        stored.enqueue(conn, destination_id, message.key, message.kind, created, text, wall_now)
        for destination_id in destination_ids
    )


def due_jobs(conn: db.Connection, wall_now: float, max_per_minute: int) -> list[DueMessage]:
    """Heads whose time has come. A destination that took `max_per_minute` messages in the last
    minute gets its whole backlog folded into one summary, sent when the minute allows."""
    jobs = []
    # Only a head is ever attempted: each destination receives its messages in queued order.
    for head in stored.heads(conn):
        if head.next_attempt > wall_now:
            continue
        sent = stored.recent_deliveries(conn, head.destination_id, wall_now - RATE_WINDOW_S)
        if len(sent) >= max_per_minute:
            allowed_at = sent[0] + RATE_WINDOW_S
            if head.kind != "summary":
                fold(conn, head.destination_id, head.created, allowed_at)
            else:
                stored.delay_head(conn, head.id, allowed_at)
            continue
        message = Message.from_json(json.loads(head.message))
        jobs.append(DueMessage(head.id, head.destination_id, head.attempts, message))
    return jobs


def fold(conn: db.Connection, destination_id: int, created: float, send_at: float) -> int:
    """Replace every pending message of a destination by one summary listing them, in place."""

    def summarise(held: list[QueuedMessage]) -> tuple[str, str]:
        messages = [Message.from_json(json.loads(m.message)) for m in held]
        summary = summary_message(messages, key=f"summary:{held[0].id}")
        return summary.key, json.dumps(summary.to_json())

    return stored.fold(conn, destination_id, created, send_at, summarise)


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


def mark_failed(
    conn: db.Connection,
    row_id: int,
    error: str,
    wall_now: float,
    first_retry_s: float,
    max_retry_s: float,
) -> float:
    """Keep the row at the head of its queue and retry after an exponential backoff."""

    def backoff(attempts: int) -> float:
        return min(max_retry_s, first_retry_s * 2.0 ** min(attempts - 1, 30))

    return stored.mark_failed(conn, row_id, error, wall_now, backoff)
