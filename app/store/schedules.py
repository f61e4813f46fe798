"""Daily schedule windows: which window each acts on, and whether it applied or was overridden,
so a restart neither applies twice nor forgets the revert at the end."""

from app.records import Schedule
from app.store.db import Connection

_COLUMNS = (
    "id, preset, start_minute, end_minute, window_start, applied, overridden, removed,"
    " closed_window, zone"
)


def in_use(conn: Connection) -> list[Schedule]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM schedules WHERE removed IS NULL ORDER BY start_minute, id"
    ).fetchall()
    return [Schedule(**dict(row)) for row in rows]


def in_play(conn: Connection) -> list[Schedule]:
    """Schedules in use, and removed ones whose window the scheduler has not closed yet."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM schedules WHERE removed IS NULL OR window_start IS NOT NULL"
        " ORDER BY start_minute, id"
    ).fetchall()
    return [Schedule(**dict(row)) for row in rows]


def _one(conn: Connection, schedule_id: int | None) -> Schedule:
    row = conn.execute(f"SELECT {_COLUMNS} FROM schedules WHERE id = ?", (schedule_id,)).fetchone()
    return Schedule(**dict(row))


def add(
    conn: Connection, preset: str, start_minute: int, end_minute: int, now: float, zone: str | None
) -> Schedule:
    schedule_id = conn.execute(
        "INSERT INTO schedules (preset, start_minute, end_minute, created, zone) "
        "VALUES (?, ?, ?, ?, ?)",
        (preset, start_minute, end_minute, now, zone),
    ).lastrowid
    return _one(conn, schedule_id)


def remove(conn: Connection, schedule_id: int, now: float) -> bool:
    """False when no schedule in use has this id."""
    cursor = conn.execute(
        "UPDATE schedules SET removed = ? WHERE id = ? AND removed IS NULL", (now, schedule_id)
    )
    return cursor.rowcount > 0


def carry_window(conn: Connection, schedule_id: int, window_start: float) -> None:
    """The held window goes on as this one (the wall clock stepped into it)."""
    conn.execute("UPDATE schedules SET window_start = ? WHERE id = ?", (window_start, schedule_id))


def open_window(conn: Connection, schedule_id: int, window_start: float) -> Schedule:
    """A new window, neither applied nor overridden yet."""
    conn.execute(
        "UPDATE schedules SET window_start = ?, applied = NULL, overridden = NULL WHERE id = ?",
        (window_start, schedule_id),
    )
    return _one(conn, schedule_id)


def override_open_windows(conn: Connection, now: float) -> None:
    conn.execute(
        "UPDATE schedules SET overridden = ? "
        "WHERE window_start IS NOT NULL AND overridden IS NULL AND removed IS NULL",
        (now,),
    )


def mark_applied(conn: Connection, schedule_id: int, now: float) -> None:
    conn.execute("UPDATE schedules SET applied = ? WHERE id = ?", (now, schedule_id))


def close_window(conn: Connection, schedule_id: int) -> None:
    conn.execute(
        "UPDATE schedules SET window_start = NULL, applied = NULL, overridden = NULL, "
        "closed_window = window_start WHERE id = ?",
        (schedule_id,),
    )
