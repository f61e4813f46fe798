"""Auto-tune sweeps as stored (autotune_sweeps, autotune_steps): the sweep, the values it found,
its steps and their scores. What a step measures and how it scores: app/tuning/autotune/."""

import json
import sqlite3
from typing import Any

from app.records import SweepRecord, SweepStepRecord
from app.store import db


def open_sweep(
    conn: sqlite3.Connection,
    array: str,
    run_id: int | None,
    started: float,
    start_values: dict[str, int],
    plan: list[dict[str, Any]],
) -> int:
    """The sweep's row, with the values found: what an abort or a restart puts back."""
    with db.write_transaction(conn):
        sweep_id = conn.execute(
            "INSERT INTO autotune_sweeps (array, run_id, started, state, start_values, plan)"
            " VALUES (?, ?, ?, 'running', ?, ?)",
            (array, run_id, started, json.dumps(start_values), json.dumps(plan)),
        ).lastrowid
    assert sweep_id is not None
    return sweep_id


def note_session(conn: sqlite3.Connection, sweep_id: int, session_id: int, opened: bool) -> None:
    """The tuning session the sweep writes in, and whether the sweep opened it."""
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE autotune_sweeps SET session_id = ?, opened_session = ? WHERE id = ?",
            (session_id, int(opened), sweep_id),
        )


def add_step(conn: sqlite3.Connection, sweep_id: int, step: SweepStepRecord) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO autotune_steps (sweep_id, seq, knob, value, role, written,"
            " measured_from, measured_to, done_blocks, speed_kb_s, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sweep_id,
                step.seq,
                step.knob,
                str(step.value),
                step.role,
                step.written,
                step.measured_from,
                step.measured_to,
                step.done_blocks,
                step.speed_kb_s,
                step.note,
            ),
        )


def note_step(conn: sqlite3.Connection, sweep_id: int, seq: int, note: str) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE autotune_steps SET note = ? WHERE sweep_id = ? AND seq = ?",
            (note, sweep_id, seq),
        )


def set_scores(conn: sqlite3.Connection, sweep_id: int, scores: dict[int, float]) -> None:
    """Each step's score (seq -> score), in one transaction."""
    with db.write_transaction(conn):
        for seq, score in scores.items():
            conn.execute(
                "UPDATE autotune_steps SET score = ? WHERE sweep_id = ? AND seq = ?",
                (score, sweep_id, seq),
            )


def finish_sweep(
    conn: sqlite3.Connection,
    sweep_id: int,
    state: str,
    reason: str,
    finished: float,
    chosen: dict[str, int] | None,
) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE autotune_sweeps SET state = ?, reason = ?, finished = ?, chosen = ? "
            "WHERE id = ?",
            (state, reason, finished, json.dumps(chosen) if chosen else None, sweep_id),
        )


def _sweep(row: sqlite3.Row) -> SweepRecord:
    return SweepRecord(
        id=row["id"],
        array=row["array"],
        run_id=row["run_id"],
        session_id=row["session_id"],
        opened_session=bool(row["opened_session"]),
        started=row["started"],
        finished=row["finished"],
        state=row["state"],
        reason=row["reason"],
        start_values=json.loads(row["start_values"]),
        plan=json.loads(row["plan"]),
        chosen=json.loads(row["chosen"]) if row["chosen"] else None,
    )


def interrupted(conn: sqlite3.Connection) -> SweepRecord | None:
    """The sweep a crash cut short (its row still says running), if any."""
    row = conn.execute("SELECT * FROM autotune_sweeps WHERE state = 'running'").fetchone()
    return _sweep(row) if row else None


def sweep(conn: sqlite3.Connection, sweep_id: int) -> SweepRecord:
    return _sweep(
        conn.execute("SELECT * FROM autotune_sweeps WHERE id = ?", (sweep_id,)).fetchone()
    )


def latest(conn: sqlite3.Connection) -> tuple[SweepRecord, list[SweepStepRecord]] | None:
    """The newest sweep and its steps in the order measured."""
    row = conn.execute("SELECT * FROM autotune_sweeps ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    steps = conn.execute(
        "SELECT seq, knob, value, role, written, measured_from, measured_to, done_blocks,"
        " speed_kb_s, score, note FROM autotune_steps WHERE sweep_id = ? ORDER BY seq",
        (row["id"],),
    )
    return _sweep(row), [SweepStepRecord(**{**dict(s), "value": int(s["value"])}) for s in steps]
