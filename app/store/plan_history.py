"""What the change planner reads of the past: the newest completed sync and grow of a pool's
arrays, and boost's measured effect on them, all of it or only what was known before a moment
(what a plan made then would have read). app/web/change_planning.py shapes them."""

import sqlite3
from collections.abc import Sequence

from app.records import MeasuredBoost, PlannerRun

SYNC_ACTIONS = ("check", "repair", "resync", "recovery")
ALWAYS = 1e18  # unix seconds later than any run: "before ALWAYS" is all of history


def _in(names: Sequence[str]) -> str:
    return ", ".join("?" * len(names))


def last_sync(
    conn: sqlite3.Connection, arrays: Sequence[str], before: float = ALWAYS
) -> PlannerRun | None:
    """The newest check, repair, resync or recovery of these arrays ended before `before`
    (per-disk work), with the highest max limit it ran under (KiB/s). An interrupted one counts:
    its samples still tell the pace (a short check that ends between two ticks can be judged
    interrupted, app/live/run_tracking.py)."""
    return _newest(
        conn,
        arrays,
        f"action IN ({_in(SYNC_ACTIONS)}) AND outcome IN ('completed', 'interrupted') "
        "AND finished > started AND finished <= ?",
        (*SYNC_ACTIONS, before),
        "finished",
    )


def last_grow(
    conn: sqlite3.Connection, arrays: Sequence[str], before: float = ALWAYS
) -> PlannerRun | None:
    """The newest reshape of these arrays: running or completed, or completed before `before`."""
    return _newest(
        conn,
        arrays,
        "action = 'reshape' AND (outcome = 'running' AND ? = ? OR "
        "outcome = 'completed' AND finished <= ?)",
        (before, ALWAYS, before),
        "started",
    )


def _newest(
    conn: sqlite3.Connection,
    arrays: Sequence[str],
    where: str,
    params: Sequence[str | float],
    newest_by: str,
) -> PlannerRun | None:
    if not arrays:
        return None
    row = conn.execute(
        "SELECT id, array, action, started, finished, outcome, total_blocks, "
        "(SELECT MAX(speed_max_kb_s) FROM samples WHERE run_id = runs.id) AS speed_max_kb_s "
        "FROM runs "
        f"WHERE array IN ({_in(arrays)}) AND total_blocks > 0 AND {where} "
        f"ORDER BY {newest_by} DESC LIMIT 1",
        (*arrays, *params),
    ).fetchone()
    return PlannerRun(**dict(row)) if row else None


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


def boost_ratios(
    conn: sqlite3.Connection, arrays: Sequence[str], before: float = ALWAYS
) -> list[MeasuredBoost]:
    """Boost's measured effects on these arrays (measured before `before`), newest first, with
    the action they sped up."""
    if not arrays:
        return []
    rows = conn.execute(
        "SELECT e.array, e.ratio, e.applied_at, r.action FROM tuning_effects e "
        "LEFT JOIN runs r ON r.id = e.run_id "
        f"WHERE e.array IN ({_in(arrays)}) AND e.preset = 'boost' "
        "AND e.measured_at IS NOT NULL AND e.measured_at <= ? AND e.ratio > 0 "
        "ORDER BY e.applied_at DESC",
        (*arrays, before),
    ).fetchall()
    return [MeasuredBoost(**dict(r)) for r in rows]


def first_limit(conn: sqlite3.Connection, run_id: int) -> float | None:
    """The effective max limit (KiB/s) at a run's first sample: what held it as it began."""
    row = conn.execute(
        "SELECT speed_max_kb_s FROM samples WHERE run_id = ? AND speed_max_kb_s IS NOT NULL "
        "ORDER BY ts LIMIT 1",
        (run_id,),
    ).fetchone()
    return float(row[0]) if row else None
