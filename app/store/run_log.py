"""The runs table as the tick writes it: a run starts, ends with an outcome, and is judged from
its newest samples."""

from typing import NamedTuple

from app.records import OpenRun, SampledProgress
from app.store.db import Connection
from app.store.history import SAMPLE_FIELDS

# What a sample stores: what the API shows of it (history.SAMPLE_FIELDS), plus these.
SAMPLE_COLUMNS = ("array", "state", "status", "mismatch_cnt", "mono", *SAMPLE_FIELDS)


class SampleRow(NamedTuple):
    """One array's sample as the samples table stores it, its fields in SAMPLE_COLUMNS' order. A
    tuple in memory (a NamedTuple adds nothing per instance): the sampler holds up to a day of
    them while the disk is full, 4.20 KiB a tick of two arrays where a dict per sample took 4.75."""

    array: str
    state: str | None
    status: str | None
    mismatch_cnt: int | None
    mono: float
    ts: float
    run_id: int | None = None
    action: str | None = None
    percent: float | None = None
    done_blocks: int | None = None
    total_blocks: int | None = None
    speed_kb_s: float | None = None
    finish_min: float | None = None
    sync_speed_kb_s: int | None = None
    degraded: int | None = None
    stripe_cache_size: int | None = None
    speed_min_kb_s: int | None = None
    speed_max_kb_s: int | None = None


_INSERT_SAMPLE = (
    f"INSERT INTO samples ({', '.join(SAMPLE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(SAMPLE_COLUMNS))})"
)

# The run's summary for GET /api/runs (migrations/0012_run_summary.sql), one sample at a time.
# SQLite's two-argument MAX() is NULL when either is: the COALESCE keeps the known one.
_ADD_TO_RUN = """
    UPDATE runs SET
        speed_samples = speed_samples + (:speed_kb_s IS NOT NULL),
        speed_sum_kb_s = speed_sum_kb_s + COALESCE(:speed_kb_s, 0),
        last_percent = COALESCE(MAX(last_percent, :percent), last_percent, :percent)
    WHERE id = :run_id
"""


def add_sample(conn: Connection, sample: SampleRow) -> None:
    conn.execute(_INSERT_SAMPLE, sample)


def add_to_run(
    conn: Connection, run_id: int, speed_kb_s: float | None, percent: float | None
) -> None:
    """Count one sample of the run into its summary."""
    conn.execute(_ADD_TO_RUN, {"run_id": run_id, "speed_kb_s": speed_kb_s, "percent": percent})


def open_runs(conn: Connection) -> dict[str, OpenRun]:
    """The runs that have not ended, by array (at most one per array)."""
    rows = conn.execute("SELECT id, array, action FROM runs WHERE finished IS NULL").fetchall()
    return {row["array"]: OpenRun(row["id"], row["array"], row["action"]) for row in rows}


def start_run(
    conn: Connection, array: str, action: str, now: float, total_blocks: int | None
) -> int | None:
    cursor = conn.execute(
        "INSERT INTO runs (array, action, started, total_blocks) VALUES (?, ?, ?, ?)",
        (array, action, now, total_blocks),
    )
    return cursor.lastrowid


def end_run(conn: Connection, run_id: int, outcome: str, now: float) -> None:
    conn.execute("UPDATE runs SET finished = ?, outcome = ? WHERE id = ?", (now, outcome, run_id))


def newest_sample(conn: Connection, run_id: int) -> SampledProgress | None:
    """The run's newest sample, whether or not md reported its progress in it."""
    row = conn.execute(
        "SELECT ts, done_blocks, total_blocks, speed_kb_s FROM samples WHERE run_id = ?"
        " ORDER BY ts DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    return SampledProgress(**dict(row)) if row else None


def newest_progress(conn: Connection, run_id: int) -> SampledProgress | None:
    """The run's newest sample that says how far it was."""
    return _progress(conn, run_id, "DESC")


def oldest_progress(conn: Connection, run_id: int) -> SampledProgress | None:
    """The run's first sample that says how far it was."""
    return _progress(conn, run_id, "ASC")


def lowest_max_kb_s(conn: Connection, run_id: int, since: float) -> float | None:
    """The lowest effective max limit of the run's samples from `since` on."""
    row = conn.execute(
        "SELECT MIN(speed_max_kb_s) FROM samples"
        " WHERE run_id = ? AND ts >= ? AND speed_max_kb_s > 0",
        (run_id, since),
    ).fetchone()
    return float(row[0]) if row and row[0] is not None else None


def _progress(conn: Connection, run_id: int, order: str) -> SampledProgress | None:
    row = conn.execute(
        "SELECT ts, done_blocks, total_blocks, speed_kb_s FROM samples"
        f" WHERE run_id = ? AND done_blocks IS NOT NULL ORDER BY ts {order} LIMIT 1",
        (run_id,),
    ).fetchone()
    return SampledProgress(**dict(row)) if row else None
