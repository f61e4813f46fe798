"""Thinning old samples, and keeping sample_rollup (the samples index) in step with them."""

import sqlite3

from app.store import db


def downsample(
    conn: sqlite3.Connection, older_than: float, drop_before: float | None = None
) -> int:
    """Keep one sample per array per minute from before `older_than`, and none from before
    `drop_before` (MDBOOST_KEEP_DAYS), except in running runs. Runs, their summaries and events,
    and the tuning history are never deleted here.

    The sample_rollup periods that held a deleted sample are rebuilt from what is left, in the
    same transaction, so the samples endpoint never picks a deleted sample. The pages the
    deleted rows took then go back to the filesystem (issue 27: they stayed in the file).
    """
    deleted = 0
    touched: dict[str, tuple[float, float]] = {}  # array: (first, last) deleted ts
    with db.write_transaction(conn):
        for array, ts in conn.execute(
            """
            DELETE FROM samples
            WHERE ts < :cutoff
              AND (run_id IS NULL OR run_id IN (SELECT id FROM runs WHERE finished IS NOT NULL))
              AND (ts < :drop OR id NOT IN (
                  SELECT MIN(id) FROM samples WHERE ts < :cutoff
                  GROUP BY array, CAST(ts / 60 AS INTEGER)))
            RETURNING array, ts
            """,
            {"cutoff": max(older_than, drop_before or 0.0), "drop": drop_before or 0.0},
        ):
            deleted += 1
            first, last = touched.get(array, (ts, ts))
            touched[array] = (min(first, ts), max(last, ts))
        for array, (first, last) in touched.items():
            params = {"array": array, "first": first, "last": last}
            conn.execute(_CLEAR_ROLLUP, params)
            conn.execute(_REBUILD_ROLLUP, params)
    db.give_back_space(conn)
    return deleted


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
