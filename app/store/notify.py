"""Notifications as stored: the destinations, the outbox (one row per message per destination)
and the detector's state. Parsing URLs and composing messages live in app/notify/."""

import sqlite3
from collections.abc import Callable

from app.records import DestinationStatus, QueuedMessage
from app.store import db


# ---- destinations
def sync_env_destinations(conn: sqlite3.Connection, labelled: dict[str, str], now: float) -> None:
    """Make the 'env' destinations the usable MDBOOST_NOTIFY URLs (url -> label)."""
    with db.write_transaction(conn):
        for row in conn.execute(
            "SELECT id, url FROM notify_destinations WHERE source = 'env' AND removed IS NULL"
        ).fetchall():
            if row["url"] not in labelled:
                _remove(conn, row["id"], now)
        for url, label in labelled.items():
            conn.execute(
                "INSERT INTO notify_destinations (url, label, source, created)"
                " VALUES (?, ?, 'env', ?)"
                " ON CONFLICT (url) DO UPDATE SET removed = NULL, source = 'env'",
                (url, label, now),
            )


def add_destination(
    conn: sqlite3.Connection, url: str, label: str, now: float, page_url: str | None
) -> int:
    """A destination added on the page (again, if it was removed); its id."""
    with db.write_transaction(conn):
        row = conn.execute(
            "INSERT INTO notify_destinations (url, label, source, created, page_url)"
            " VALUES (?, ?, 'page', ?, ?)"
            " ON CONFLICT (url) DO UPDATE SET removed = NULL,"
            " page_url = COALESCE(excluded.page_url, page_url) RETURNING id",
            (url, label, now, page_url),
        ).fetchone()
    return int(row[0])


def set_page_url(conn: sqlite3.Connection, destination_id: int, page_url: str) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE notify_destinations SET page_url = ? WHERE id = ?", (page_url, destination_id)
        )


def owner_page(conn: sqlite3.Connection) -> str | None:
    """The newest page address a destination still in use was set up from."""
    row = conn.execute(
        "SELECT page_url FROM notify_destinations WHERE page_url IS NOT NULL AND removed IS NULL"
        " ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return str(row[0]) if row else None


def remove_page_destination(conn: sqlite3.Connection, destination_id: int, now: float) -> bool:
    """Remove a page-added destination and cancel what it has not delivered yet."""
    with db.write_transaction(conn):
        row = conn.execute(
            "SELECT id FROM notify_destinations"
            " WHERE id = ? AND source = 'page' AND removed IS NULL",
            (destination_id,),
        ).fetchone()
        if row is None:
            return False
        _remove(conn, destination_id, now)
    return True


def _remove(conn: sqlite3.Connection, destination_id: int, now: float) -> None:
    conn.execute("UPDATE notify_destinations SET removed = ? WHERE id = ?", (now, destination_id))
    conn.execute(
        "UPDATE notify_outbox SET state = 'cancelled'"
        " WHERE destination_id = ? AND state = 'pending'",
        (destination_id,),
    )


def active_destination_ids(conn: sqlite3.Connection) -> list[int]:
    rows = conn.execute("SELECT id FROM notify_destinations WHERE removed IS NULL ORDER BY id")
    return [int(r[0]) for r in rows]


def destination_url(conn: sqlite3.Connection, destination_id: int) -> str | None:
    row = conn.execute(
        "SELECT url FROM notify_destinations WHERE id = ? AND removed IS NULL", (destination_id,)
    ).fetchone()
    return str(row[0]) if row else None


def destination_statuses(conn: sqlite3.Connection) -> list[DestinationStatus]:
    rows = conn.execute(
        "SELECT d.id, d.label, d.source, d.created,"
        " SUM(o.state = 'pending') AS pending, SUM(o.state = 'delivered') AS delivered,"
        " MAX(o.delivered) AS last_delivered,"
        " (SELECT last_error FROM notify_outbox e WHERE e.destination_id = d.id"
        "   AND e.state = 'pending' AND e.last_error IS NOT NULL ORDER BY e.id LIMIT 1)"
        "   AS last_error"
        " FROM notify_destinations d LEFT JOIN notify_outbox o ON o.destination_id = d.id"
        " WHERE d.removed IS NULL GROUP BY d.id ORDER BY d.id"
    ).fetchall()
    return [
        DestinationStatus(
            id=r["id"],
            label=r["label"],
            source=r["source"],
            created=r["created"],
            pending=r["pending"] or 0,
            delivered=r["delivered"] or 0,
            last_delivered=r["last_delivered"],
            last_error=r["last_error"],
        )
        for r in rows
    ]


# ---- the outbox
def enqueue(
    conn: sqlite3.Connection,
    destination_id: int,
    dedup_key: str,
    kind: str,
    created: float,
    message: str,
    next_attempt: float,
) -> int:
    """Queue one message (JSON) for one destination, inside the caller's transaction; a dedup
    key already queued for it is ignored. The rows added: 1 or 0."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO notify_outbox"
        " (destination_id, dedup_key, kind, created, message, next_attempt)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (destination_id, dedup_key, kind, created, message, next_attempt),
    )
    return cursor.rowcount


_QUEUED = (
    "o.id, o.destination_id, o.dedup_key, o.kind, o.created, o.message, o.next_attempt, o.attempts"
)


def _queued(row: sqlite3.Row) -> QueuedMessage:
    return QueuedMessage(
        id=row["id"],
        destination_id=row["destination_id"],
        dedup_key=row["dedup_key"],
        kind=row["kind"],
        created=row["created"],
        message=row["message"],
        next_attempt=row["next_attempt"],
        attempts=row["attempts"],
    )


def heads(conn: sqlite3.Connection) -> list[QueuedMessage]:
    """The oldest pending message of each destination in use."""
    rows = conn.execute(
        f"SELECT {_QUEUED} FROM notify_destinations d JOIN notify_outbox o ON o.id = ("
        "  SELECT MIN(id) FROM notify_outbox WHERE destination_id = d.id AND state = 'pending')"
        " WHERE d.removed IS NULL ORDER BY o.id"
    )
    return [_queued(r) for r in rows]


def delay_head(conn: sqlite3.Connection, row_id: int, next_attempt: float) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE notify_outbox SET next_attempt = ? WHERE id = ?", (next_attempt, row_id)
        )


def recent_deliveries(conn: sqlite3.Connection, destination_id: int, since: float) -> list[float]:
    """When the destination's messages delivered after `since` were, oldest first."""
    rows = conn.execute(
        "SELECT delivered FROM notify_outbox WHERE destination_id = ? AND delivered > ?"
        " ORDER BY delivered",
        (destination_id, since),
    )
    return [float(r[0]) for r in rows]


def fold(
    conn: sqlite3.Connection,
    destination_id: int,
    created: float,
    send_at: float,
    summarise: Callable[[list[QueuedMessage]], tuple[str, str]],
) -> int:
    """Replace every pending message of a destination by one summary, in one transaction:
    `summarise` turns them into the summary's (dedup key, message JSON). The summary's id."""
    with db.write_transaction(conn):
        held = [
            _queued(r)
            for r in conn.execute(
                f"SELECT {_QUEUED} FROM notify_outbox o"
                " WHERE destination_id = ? AND state = 'pending' ORDER BY id",
                (destination_id,),
            )
        ]
        key, message = summarise(held)
        summary_id = conn.execute(
            "INSERT INTO notify_outbox"
            " (destination_id, dedup_key, kind, created, message, next_attempt)"
            " VALUES (?, ?, 'summary', ?, ?, ?)",
            (destination_id, key, created, message, send_at),
        ).lastrowid
        conn.executemany(
            "UPDATE notify_outbox SET state = 'summarised', summary_id = ? WHERE id = ?",
            [(summary_id, m.id) for m in held],
        )
    assert summary_id is not None
    return summary_id


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
    backoff: Callable[[int], float],
) -> float:
    """Count a failed attempt and keep the message at the head of its queue; it is tried again
    `backoff(attempts)` seconds from `wall_now`. Those seconds."""
    with db.write_transaction(conn):
        attempts = conn.execute(
            "UPDATE notify_outbox SET attempts = attempts + 1, last_error = ?"
            " WHERE id = ? RETURNING attempts",
            (error[:500], row_id),
        ).fetchone()[0]
        delay = backoff(int(attempts))
        conn.execute(
            "UPDATE notify_outbox SET next_attempt = ? WHERE id = ?", (wall_now + delay, row_id)
        )
    return delay


# ---- the detector's state
def detector_state(conn: sqlite3.Connection) -> str | None:
    """The event detector's last state, as JSON."""
    row = conn.execute("SELECT state FROM notify_state WHERE id = 1").fetchone()
    return str(row[0]) if row else None


def save_detector_state(conn: sqlite3.Connection, state: str) -> None:
    """Inside the caller's transaction, with the messages the state's events queued; alone, one
    statement is its own transaction."""
    conn.execute(
        "INSERT INTO notify_state (id, state) VALUES (1, ?)"
        " ON CONFLICT (id) DO UPDATE SET state = excluded.state",
        (state,),
    )
