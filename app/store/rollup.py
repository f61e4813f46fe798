"""Thinning old samples, and keeping sample_rollup (the samples index) in step with them."""

import math
import sqlite3
from collections.abc import Iterator

from app.store import db

# Thinning goes one array and this many seconds of its samples at a time, in windows aligned with
# the rollup's longest period: each step is a short transaction, so a tick's write, a revert or a
# stop never waits long for it.
WINDOW_S = 3 * 3600


def downsample(
    conn: sqlite3.Connection, older_than: float, drop_before: float | None = None
) -> int:
    """All of downsample_steps at once, then the freed pages go back to the filesystem rather
    than stay in the file; the rows deleted."""
    deleted = sum(downsample_steps(conn, older_than, drop_before))
    db.give_back_space(conn)
    return deleted


def downsample_steps(
    conn: sqlite3.Connection, older_than: float, drop_before: float | None = None
) -> Iterator[int]:
    """Keep one sample per array per minute from before `older_than`, and none from before
    `drop_before` (MDBOOST_KEEP_DAYS), except in running runs. Runs, their summaries and events,
    and the tuning history are never deleted here. Yields the rows each step deleted.

    The sample_rollup periods that held a deleted sample are rebuilt from what is left, in the
    same transaction, so the samples endpoint never picks a deleted sample.
    """
    cutoff = max(older_than, drop_before or 0.0)
    arrays = [row[0] for row in conn.execute("SELECT DISTINCT array FROM samples")]
    for array in arrays:
        first = conn.execute("SELECT MIN(ts) FROM samples WHERE array = ?", (array,)).fetchone()[0]
        start = math.floor(first / WINDOW_S) * WINDOW_S if first is not None else cutoff
        while start < cutoff:
            end = min(start + WINDOW_S, cutoff)
            yield _thin(conn, array, start, end, cutoff, drop_before or 0.0)
            start = end


def _thin(
    conn: sqlite3.Connection, array: str, start: float, end: float, cutoff: float, drop: float
) -> int:
    """One step: the samples of `array` in [start, end), one per minute kept (none before
    `drop`), and the rollup periods they touched rebuilt, in one transaction."""
    params = {"array": array, "start": start, "end": end, "cutoff": cutoff, "drop": drop}
    with db.write_transaction(conn):
        deleted = [
            row[0]
            for row in conn.execute(
                """
                DELETE FROM samples
                WHERE array = :array AND ts >= :start AND ts < :end AND ts < :cutoff
                  AND (run_id IS NULL OR run_id IN (SELECT id FROM runs WHERE finished IS NOT NULL))
                  AND (ts < :drop OR id NOT IN (
                      SELECT MIN(id) FROM samples
                      WHERE array = :array AND ts >= :start AND ts < :end AND ts < :cutoff
                      GROUP BY CAST(ts / 60 AS INTEGER)))
                RETURNING ts
                """,
                params,
            )
        ]
        if deleted:
            touched = {"array": array, "first": min(deleted), "last": max(deleted)}
            conn.execute(_CLEAR_ROLLUP, touched)
            conn.execute(_REBUILD_ROLLUP, touched)
    return len(deleted)


# Every level's periods from the one holding `first` to the one holding `last`.
_CLEAR_ROLLUP = """
    DELETE FROM sample_rollup
    WHERE array = :array
      AND period BETWEEN CAST(:first / period_s AS INTEGER) AND CAST(:last / period_s AS INTEGER)
"""
# The insert trigger's rule (migrations/0005_sample_rollup.sql) over the samples of those periods.
# A sample a hair below a period's start can round into it, hence the 1 s of slack in the range.
_REBUILD_ROLLUP = """
    INSERT INTO sample_rollup
    SELECT samples.array, period_s, CAST(samples.ts / period_s AS INTEGER),
           samples.id, COALESCE(samples.speed_kb_s, -1), samples.ts,
           samples.id, COALESCE(samples.speed_kb_s, -1), samples.ts
    FROM sample_rollup_levels JOIN samples
      ON samples.array = :array
     AND samples.ts >= CAST(:first / period_s AS INTEGER) * period_s - 1
     AND samples.ts < (CAST(:last / period_s AS INTEGER) + 1) * period_s
    WHERE CAST(samples.ts / period_s AS INTEGER)
          BETWEEN CAST(:first / period_s AS INTEGER) AND CAST(:last / period_s AS INTEGER)
    ON CONFLICT DO UPDATE SET
        slowest_id = iif((excluded.slowest_kb_s, excluded.slowest_ts, excluded.slowest_id)
            < (slowest_kb_s, slowest_ts, slowest_id), excluded.slowest_id, slowest_id),
        slowest_ts = iif((excluded.slowest_kb_s, excluded.slowest_ts, excluded.slowest_id)
            < (slowest_kb_s, slowest_ts, slowest_id), excluded.slowest_ts, slowest_ts),
        slowest_kb_s = min(excluded.slowest_kb_s, slowest_kb_s),
        fastest_id = iif((-excluded.fastest_kb_s, excluded.fastest_ts, excluded.fastest_id)
            < (-fastest_kb_s, fastest_ts, fastest_id), excluded.fastest_id, fastest_id),
        fastest_ts = iif((-excluded.fastest_kb_s, excluded.fastest_ts, excluded.fastest_id)
            < (-fastest_kb_s, fastest_ts, fastest_id), excluded.fastest_ts, fastest_ts),
        fastest_kb_s = max(excluded.fastest_kb_s, fastest_kb_s)
"""
