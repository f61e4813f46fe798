"""The runs table as the tick writes it: a run starts, ends with an outcome, and is judged from
its newest samples."""

from app.records import OpenRun, SampledProgress
from app.store.db import Connection


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
    row = conn.execute(
        "SELECT ts, done_blocks, total_blocks, speed_kb_s FROM samples"
        " WHERE run_id = ? AND done_blocks IS NOT NULL ORDER BY ts DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    return SampledProgress(**dict(row)) if row else None
