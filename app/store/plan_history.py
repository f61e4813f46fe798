"""What the change planner reads of the past (issue 31): the newest completed sync and grow of a
pool's arrays, and boost's measured effect on them. Plain rows; app/web/planning.py shapes them."""

import sqlite3
from collections.abc import Sequence
from typing import Any

SYNC_ACTIONS = ("check", "repair", "resync", "recovery")


def _in(names: Sequence[str]) -> str:
    return ", ".join("?" * len(names))


def last_sync(conn: sqlite3.Connection, arrays: Sequence[str]) -> dict[str, Any] | None:
    """The newest completed check, repair, resync or recovery of these arrays (per-disk work)."""
    return _newest(
        conn,
        arrays,
        f"action IN ({_in(SYNC_ACTIONS)}) AND outcome = 'completed' AND finished > started",
        SYNC_ACTIONS,
        "finished",
    )


def last_grow(conn: sqlite3.Connection, arrays: Sequence[str]) -> dict[str, Any] | None:
    """The newest reshape of these arrays, running or completed."""
    return _newest(
        conn, arrays, "action = 'reshape' AND outcome IN ('completed', 'running')", (), "started"
    )


def _newest(
    conn: sqlite3.Connection,
    arrays: Sequence[str],
    where: str,
    params: Sequence[str],
    newest_by: str,
) -> dict[str, Any] | None:
    if not arrays:
        return None
    row = conn.execute(
        "SELECT id, array, action, started, finished, outcome, total_blocks FROM runs "
        f"WHERE array IN ({_in(arrays)}) AND total_blocks > 0 AND {where} "
        f"ORDER BY {newest_by} DESC LIMIT 1",
        (*arrays, *params),
    ).fetchone()
    return dict(row) if row else None


def progress_at(
    conn: sqlite3.Connection, run_id: int, done_blocks: float | None = None
) -> tuple[float, int] | None:
    """(ts, done) of a run's first sample, or of its first at or past `done_blocks`."""
    row = conn.execute(
        "SELECT ts, done_blocks FROM samples WHERE run_id = ? AND done_blocks IS NOT NULL "
        "AND done_blocks >= ? ORDER BY ts LIMIT 1",
        (run_id, done_blocks or 0),
    ).fetchone()
    return (row[0], row[1]) if row else None


def last_progress(conn: sqlite3.Connection, run_id: int) -> tuple[float, int] | None:
    """(ts, done) of a run's newest sample with progress."""
    row = conn.execute(
        "SELECT ts, done_blocks FROM samples WHERE run_id = ? AND done_blocks IS NOT NULL "
        "ORDER BY ts DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    return (row[0], row[1]) if row else None


def boost_ratios(conn: sqlite3.Connection, arrays: Sequence[str]) -> list[dict[str, Any]]:
    """Boost's measured effects on these arrays, newest first, with the action they sped up."""
    if not arrays:
        return []
    rows = conn.execute(
        "SELECT e.array, e.ratio, e.applied_at, r.action FROM tuning_effects e "
        "LEFT JOIN runs r ON r.id = e.run_id "
        f"WHERE e.array IN ({_in(arrays)}) AND e.preset = 'boost' "
        "AND e.measured_at IS NOT NULL AND e.ratio > 0 ORDER BY e.applied_at DESC",
        tuple(arrays),
    ).fetchall()
    return [dict(r) for r in rows]
