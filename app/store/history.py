"""Read-side queries over samples, runs and events, shaped for the API and the page."""

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from app.records import LastSample
from app.shapes.arrays import EventBody, Run, RunDetail, Sample


class SamplePoint(NamedTuple):
    """A sample as GET /api/arrays/{name}/samples answers it, and a point of its chart. A tuple in
    memory, whose _asdict() is the JSON object as cheaply as a dict of the row was: 500 of them
    are dumped at each poll."""

    ts: float
    run_id: int | None
    action: str | None
    percent: float | None
    done_blocks: int | None
    total_blocks: int | None
    speed_kb_s: float | None
    finish_min: float | None
    sync_speed_kb_s: int | None
    degraded: int | None
    stripe_cache_size: int | None
    speed_min_kb_s: int | None
    speed_max_kb_s: int | None


class ForecastSample(NamedTuple):
    """A run's sample as the forecast reads it (its limits the effective ones)."""

    ts: float
    done_blocks: int
    total_blocks: int | None
    speed_min_kb_s: int | None
    speed_max_kb_s: int | None
    stripe_cache_size: int | None


SAMPLE_FIELDS = SamplePoint._fields
_COLUMNS = ", ".join(SAMPLE_FIELDS)


def array_known(conn: sqlite3.Connection, array: str) -> bool:
    row = conn.execute("SELECT 1 FROM samples WHERE array = ? LIMIT 1", (array,)).fetchone()
    return row is not None


def samples(
    conn: sqlite3.Connection,
    array: str,
    since: float | None = None,
    until: float | None = None,
    points: int = 500,
) -> list[SamplePoint]:
    """Samples of one array in [since, until], at most `points` of them.

    Downsampling keeps the shape: the range is cut into points/2 buckets and each bucket keeps
    its slowest and its fastest sample, so dips and bursts survive, and the progress line too.
    Buckets at least a rollup period wide are made of whole periods and read sample_rollup.
    """
    where = "array = :array AND ts >= :since AND ts <= :until"
    params: dict[str, Any] = {"array": array, "since": since or 0.0, "until": until or 1e18}
    params["more_than_points"] = points + 1
    count = conn.execute(
        f"SELECT COUNT(*) FROM (SELECT 1 FROM samples WHERE {where} LIMIT :more_than_points)",
        params,
    ).fetchone()[0]
    if count <= points:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM samples WHERE {where} ORDER BY ts", params
        ).fetchall()
        return [SamplePoint(*r) for r in rows]
    # Two single-aggregate queries: each is one index seek (lang_select.html, min/max optimization).
    first = conn.execute(f"SELECT MIN(ts) FROM samples WHERE {where}", params).fetchone()[0]
    last = conn.execute(f"SELECT MAX(ts) FROM samples WHERE {where}", params).fetchone()[0]
    buckets = max(points // 2, 1)
    periods = [row[0] for row in conn.execute(_LEVELS)]
    for period_s in periods:
        # Python's float division and int() are SQLite's `/` and CAST(... AS INTEGER).
        first_period, last_period = int(first / period_s), int(last / period_s)
        if last_period - first_period + 1 >= buckets:
            rows = conn.execute(
                _PICK_FROM_ROLLUP,
                {
                    "array": array,
                    "first": first,
                    "last": last,
                    "period_s": period_s,
                    "first_period": first_period,
                    "last_period": last_period,
                    "periods": last_period - first_period + 1,
                    "buckets": buckets,
                    # Raw samples of the two edge periods, which the range may cut; 1 s of slack
                    # for a sample a hair below the last period's start that rounds into it.
                    "first_edge_end": (first_period + 1) * period_s,
                    "last_edge_start": last_period * period_s - 1,
                },
            ).fetchall()
            return [SamplePoint(*r) for r in rows]
    params.update(first=first, points=points, buckets=buckets)
    params["width"] = max((last - first) / buckets, 1e-9)
    rows = conn.execute(_PICK_EXTREMES, params).fetchall()
    return [SamplePoint(*r) for r in rows]


# The sample at or after each of :n evenly spaced times in [first, last]: one index seek each,
# so the work is the same for a run of an hour and one of a week (tests/web/test_polls.py).
_PROGRESS_LINE = """
    WITH RECURSIVE span(first, last) AS (
        SELECT (SELECT MIN(ts) FROM samples WHERE array = :array AND ts >= :since AND ts <= :until),
               (SELECT MAX(ts) FROM samples WHERE array = :array AND ts >= :since AND ts <= :until)
    ),
    k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < :n - 1)
    SELECT DISTINCT s.ts, s.percent FROM k, span JOIN samples s ON s.id = (
        SELECT id FROM samples WHERE array = :array
          AND ts >= span.first + k.i * (span.last - span.first) / (:n - 1) AND ts <= :until
        ORDER BY ts LIMIT 1)
    ORDER BY s.ts
"""


def progress_line(
    conn: sqlite3.Connection, array: str, since: float, until: float | None, points: int
) -> list[tuple[float, float]]:
    """(ts, percent) at `points` evenly spaced times of [since, until]: a picture's line."""
    params = {"array": array, "since": since, "until": until or 1e18, "n": max(points, 2)}
    rows = conn.execute(_PROGRESS_LINE, params).fetchall()
    return [(row[0], row[1]) for row in rows if row[1] is not None]


def carried_to(points: list[SamplePoint], now: float) -> list[SamplePoint]:
    """The sampler stores an idle array's sample only when it changes (app/live/idle.py): the
    last one still holds at `now`, the present tick, so the line goes on to it unbroken."""
    if points and points[-1].run_id is None and points[-1].ts < now:
        return [*points, points[-1]._replace(ts=now)]
    return points


# Coarsest first: the first level with at least one period per bucket is used.
_LEVELS = "SELECT period_s FROM sample_rollup_levels ORDER BY period_s DESC"

# Bucket k holds first + k*width <= ts < first + (k+1)*width (k = 0..buckets: the last sample
# starts bucket `buckets`). Each bucket is a range of the samples_by_array index, which carries
# speed_kb_s, so picking its extremes reads the index only, in order, with no sort; SQLite returns
# the bare column of the row that holds the MIN()/MAX() (lang_select.html).
_PICK_EXTREMES = f"""
    WITH RECURSIVE bucket(k) AS (
        SELECT 0 UNION ALL SELECT k + 1 FROM bucket WHERE k < :buckets
    ),
    picks(slowest, fastest) AS MATERIALIZED (
        SELECT
            (SELECT id FROM (SELECT MIN(COALESCE(speed_kb_s, -1)), id FROM samples
                WHERE array = :array AND ts >= :first + k * :width
                  AND ts < :first + (k + 1) * :width)),
            (SELECT id FROM (SELECT MAX(COALESCE(speed_kb_s, -1)), id FROM samples
                WHERE array = :array AND ts >= :first + k * :width
                  AND ts < :first + (k + 1) * :width))
        FROM bucket
    )
    SELECT {_COLUMNS} FROM samples
    WHERE id IN (SELECT slowest FROM picks UNION SELECT fastest FROM picks)
    ORDER BY ts LIMIT :points
"""

# Period p goes to bucket (p - first_period) * buckets / periods: every bucket is one or more whole
# periods. Inner periods come from sample_rollup; the edge periods from the raw samples in range
# (a sample read twice is harmless: the order below picks it once). Slowest and fastest order by
# speed (NULL = -1), ts, id, as the rollup does (migrations/0005_sample_rollup.sql).
_PICK_FROM_ROLLUP = f"""
    WITH part(period, slowest_id, slowest_kb_s, slowest_ts, fastest_id, fastest_kb_s, fastest_ts)
    AS (
        SELECT period, slowest_id, slowest_kb_s, slowest_ts, fastest_id, fastest_kb_s, fastest_ts
        FROM sample_rollup
        WHERE array = :array AND period_s = :period_s
          AND period > :first_period AND period < :last_period
        UNION ALL
        SELECT CAST(ts / :period_s AS INTEGER), id, COALESCE(speed_kb_s, -1), ts,
               id, COALESCE(speed_kb_s, -1), ts
        FROM samples WHERE array = :array AND ts >= :first AND ts < :first_edge_end
        UNION ALL
        SELECT CAST(ts / :period_s AS INTEGER), id, COALESCE(speed_kb_s, -1), ts,
               id, COALESCE(speed_kb_s, -1), ts
        FROM samples WHERE array = :array AND ts >= :last_edge_start AND ts <= :last
    ),
    ranked AS (
        SELECT slowest_id, fastest_id,
            row_number() OVER (PARTITION BY bucket ORDER BY slowest_kb_s, slowest_ts, slowest_id)
                AS slowest_rank,
            row_number() OVER (
                PARTITION BY bucket ORDER BY fastest_kb_s DESC, fastest_ts, fastest_id)
                AS fastest_rank
        FROM (SELECT *, (period - :first_period) * :buckets / :periods AS bucket FROM part)
    )
    SELECT {_COLUMNS} FROM samples
    WHERE id IN (
        SELECT slowest_id FROM ranked WHERE slowest_rank = 1
        UNION SELECT fastest_id FROM ranked WHERE fastest_rank = 1)
    ORDER BY ts
"""


# A run as the API shows it: its row with the summary the sampler keeps (0012_run_summary.sql).
RUN_COLUMNS = (
    "id, array, action, started, finished, outcome, total_blocks, "
    "speed_sum_kb_s / NULLIF(speed_samples, 0) AS avg_speed_kb_s, last_percent"
)


def _run_fields(row: sqlite3.Row) -> dict[str, Any]:
    """The fields of the API's Run from a row of RUN_COLUMNS, with its duration."""
    run = dict(row)
    end = run["finished"]
    run["duration_s"] = (end - run["started"]) if end is not None else None
    return run


def runs(conn: sqlite3.Connection, array: str | None = None, limit: int = 100) -> list[Run]:
    """Runs newest first, each with its average speed: one row per run, whatever its length."""
    query = f"""
        SELECT {RUN_COLUMNS} FROM runs
        WHERE (:array IS NULL OR array = :array) ORDER BY started DESC LIMIT :limit
    """
    return [Run(**_run_fields(r)) for r in conn.execute(query, {"array": array, "limit": limit})]


def run(conn: sqlite3.Connection, run_id: int) -> RunDetail | None:
    """GET /api/runs/{id}: the run, its events, its newest sample (the rows, as the API's)."""
    row = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        return None
    latest = conn.execute(
        f"SELECT {_COLUMNS} FROM samples WHERE run_id = ? ORDER BY ts DESC LIMIT 1", (run_id,)
    ).fetchone()
    return RunDetail(
        **_run_fields(row),
        events=events(conn, run_id),
        latest_sample=Sample(**dict(latest)) if latest else None,
    )


# A tuning effect measured against the kernel's own settings: its apply opened its session. One
# applied over another preset (boost over auto-tune) compares two tuned paces: its ×1 says
# nothing of what boost does to an untuned run.
FROM_UNTUNED = (
    "NOT EXISTS (SELECT 1 FROM tuning_ops this JOIN tuning_ops earlier"
    " ON earlier.session_id = this.session_id AND earlier.id < this.id"
    " WHERE this.id = tuning_effects.op_id AND earlier.kind = 'apply' AND earlier.state = 'done')"
)


def measured_ratios(
    conn: sqlite3.Connection, run_ids: Sequence[int]
) -> dict[int, dict[str, float]]:
    """Each run's presets' latest effect measured from the untuned pace during it (speed after /
    before), by run and preset: every run the page lists in one statement."""
    marks = ", ".join("?" * len(run_ids))
    rows = conn.execute(
        f"SELECT run_id, preset, ratio FROM tuning_effects WHERE run_id IN ({marks})"
        f" AND measured_at IS NOT NULL AND ratio > 0 AND {FROM_UNTUNED} ORDER BY applied_at",
        tuple(run_ids),
    ).fetchall()
    found: dict[int, dict[str, float]] = {run_id: {} for run_id in run_ids}
    for run_id, preset, ratio in rows:
        found[run_id][preset] = float(ratio)
    return found


def last_sync_pace(conn: sqlite3.Connection, array: str) -> tuple[str, float] | None:
    """The array's last completed check or resync and its average KiB/s: how fast its disks
    went when a whole-array sync last ran, a ceiling for what lifting a limit can give."""
    row = conn.execute(
        "SELECT action, speed_sum_kb_s / NULLIF(speed_samples, 0) FROM runs"
        " WHERE array = ? AND outcome = 'completed' AND action IN ('check', 'resync', 'repair')"
        " ORDER BY finished DESC LIMIT 1",
        (array,),
    ).fetchone()
    return (str(row[0]), float(row[1])) if row and row[1] else None


def open_run_id(conn: sqlite3.Connection, array: str) -> int | None:
    row = conn.execute(
        "SELECT id FROM runs WHERE array = ? AND finished IS NULL", (array,)
    ).fetchone()
    return int(row[0]) if row else None


def open_run(conn: sqlite3.Connection, array: str) -> Run | None:
    """The array's run that has not ended yet."""
    row = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE array = ? AND finished IS NULL", (array,)
    ).fetchone()
    return Run(**_run_fields(row)) if row else None


def open_runs_by_array(conn: sqlite3.Connection) -> dict[str, Run]:
    """Each array's run that has not ended yet (one at most: one_open_run_per_array), by array:
    one statement for every array."""
    rows = conn.execute(f"SELECT {RUN_COLUMNS} FROM runs WHERE finished IS NULL")
    return {row["array"]: Run(**_run_fields(row)) for row in rows}


def last_run(conn: sqlite3.Connection, array: str) -> Run | None:
    """The array's newest run."""
    row = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE array = ? ORDER BY started DESC LIMIT 1", (array,)
    ).fetchone()
    return Run(**_run_fields(row)) if row else None


def finished_run(conn: sqlite3.Connection, run_id: int) -> Run | None:
    """The run, once it has ended."""
    row = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ? AND finished IS NOT NULL", (run_id,)
    ).fetchone()
    return Run(**_run_fields(row)) if row else None


def last_samples(conn: sqlite3.Connection, arrays: Sequence[str]) -> dict[str, LastSample]:
    """Each array's newest sample, by array (none for an array never sampled): one statement,
    one index seek per array."""
    if not arrays:
        return {}
    names = ", ".join("(?)" for _ in arrays)
    rows = conn.execute(
        f"WITH named(array) AS (VALUES {names})"
        " SELECT s.array, s.run_id, s.action, s.done_blocks, s.total_blocks, s.percent,"
        " s.degraded, s.mismatch_cnt FROM named JOIN samples s ON s.id = ("
        "SELECT id FROM samples WHERE array = named.array ORDER BY ts DESC LIMIT 1)",
        tuple(arrays),
    )
    return {row[0]: LastSample(*row[1:]) for row in rows}


def _event(row: sqlite3.Row) -> EventBody:
    return EventBody(**{**dict(row), "detail": json.loads(row["detail"])})


def events_between_ids(
    conn: sqlite3.Connection, kinds: tuple[str, ...], after_id: int, up_to_id: int
) -> list[EventBody]:
    """Every event of `kinds` with after_id < id <= up_to_id, oldest first."""
    rows = conn.execute(
        "SELECT id, ts, array, run_id, kind, detail FROM events"
        f" WHERE kind IN ({', '.join('?' * len(kinds))}) AND id > ? AND id <= ? ORDER BY id",
        (*kinds, after_id, up_to_id),
    )
    return [_event(r) for r in rows]


def last_event_id(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()[0])


def events(conn: sqlite3.Connection, run_id: int) -> list[EventBody]:
    """A run's events, oldest first."""
    rows = conn.execute(
        "SELECT id, ts, array, run_id, kind, detail FROM events WHERE run_id = ? ORDER BY ts",
        (run_id,),
    ).fetchall()
    return [_event(r) for r in rows]


def events_of_kinds(
    conn: sqlite3.Connection, run_ids: Sequence[int], kinds: tuple[str, ...]
) -> dict[int, list[EventBody]]:
    """The events of `kinds` of each run, oldest first, by run: every run the page lists in one
    statement."""
    rows = conn.execute(
        # Without INDEXED BY, SQLite walks all of the runs' events in ts order to skip a sort.
        "SELECT id, ts, array, run_id, kind, detail FROM events INDEXED BY events_by_run_kind "
        f"WHERE run_id IN ({', '.join('?' * len(run_ids))})"
        f" AND kind IN ({', '.join('?' * len(kinds))}) ORDER BY ts",
        (*run_ids, *kinds),
    ).fetchall()
    found: dict[int, list[EventBody]] = {run_id: [] for run_id in run_ids}
    for row in rows:
        found[row["run_id"]].append(_event(row))
    return found


def events_between(
    conn: sqlite3.Connection, run_id: int, since: float, until: float
) -> list[EventBody]:
    """A run's events with since < ts <= until: what one tick adds, not the whole run's."""
    rows = conn.execute(
        "SELECT id, ts, array, run_id, kind, detail FROM events "
        "WHERE run_id = ? AND ts > ? AND ts <= ? ORDER BY ts",
        (run_id, since, until),
    ).fetchall()
    return [_event(r) for r in rows]


def run_samples(conn: sqlite3.Connection, run_id: int) -> Iterator[ForecastSample]:
    """One run's samples, oldest first: the forecast's input.

    One row at a time: a list of a 3-day run's 17,000+ rows cost the server 4.5 MiB of RSS that
    it never gave back (Python keeps a partly used arena of small objects)."""
    cursor = conn.execute(
        "SELECT ts, done_blocks, total_blocks, speed_min_kb_s, speed_max_kb_s, stripe_cache_size"
        " FROM samples WHERE run_id = ? AND done_blocks IS NOT NULL ORDER BY ts",
        (run_id,),
    )
    cursor.row_factory = None  # plain tuples, not sqlite3.Row
    yield from map(ForecastSample._make, cursor)


def add_event(
    conn: sqlite3.Connection,
    ts: float,
    array: str | None,
    run_id: int | None,
    kind: str,
    detail: dict[str, Any],
) -> None:
    conn.execute(
        "INSERT INTO events (ts, array, run_id, kind, detail) VALUES (?, ?, ?, ?, ?)",
        (ts, array, run_id, kind, json.dumps(detail)),
    )
