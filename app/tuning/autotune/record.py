"""An auto-tune sweep's record in SQLite (autotune_sweeps, autotune_steps), and its view for
GET /api/tuning and the page: the sweep, its steps with their scores, the step measured now."""

import json
import sqlite3

from app.shapes.tuning import Sweep, SweepStep, SweepStepNow
from app.store import db
from app.tuning.autotune import sweep

KNOB_LABELS = {"stripe_cache_size": "stripe cache", "read_ahead_kb": "read-ahead"}


def setting_label(knob: str, value: int) -> str:
    """'stripe cache 4096', 'read-ahead 4096 KiB': a step as the page and the chart name it."""
    unit = " KiB" if knob == "read_ahead_kb" else ""
    return f"{KNOB_LABELS[knob]} {value}{unit}"


def open_sweep(
    conn: sqlite3.Connection,
    array: str,
    run_id: int | None,
    started: float,
    start_values: dict[str, int],
    phases: list[sweep.Phase],
) -> int:
    """The sweep's row, with the values found: what an abort or a restart puts back."""
    with db.write_transaction(conn):
        sweep_id = conn.execute(
            "INSERT INTO autotune_sweeps (array, run_id, started, state, start_values, plan)"
            " VALUES (?, ?, ?, 'running', ?, ?)",
            (
                array,
                run_id,
                started,
                json.dumps(start_values),
                json.dumps([p.to_json() for p in phases]),
            ),
        ).lastrowid
    assert sweep_id is not None
    return sweep_id


def note_session(conn: sqlite3.Connection, sweep_id: int, session_id: int, opened: bool) -> None:
    """The tuning session the sweep writes in, and whether the sweep opened it (then an abort
    reverts the session; else it writes back only the values it found)."""
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE autotune_sweeps SET session_id = ?, opened_session = ? WHERE id = ?",
            (session_id, int(opened), sweep_id),
        )


def store_step(
    conn: sqlite3.Connection,
    sweep_id: int,
    seq: int,
    knob: str,
    value: int,
    role: str,
    written: float,
    window: sweep.Window | None,
    note: str | None,
) -> None:
    points = window.points if window else []
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO autotune_steps (sweep_id, seq, knob, value, role, written,"
            " measured_from, measured_to, done_blocks, speed_kb_s, note)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                sweep_id,
                seq,
                knob,
                str(value),
                role,
                written,
                points[0][0] if points else None,
                points[-1][0] if points else None,
                points[-1][1] - points[0][1] if points else None,
                window.speed_kb_s if window else None,
                note,
            ),
        )


def note_step(conn: sqlite3.Connection, sweep_id: int, seq: int, note: str) -> None:
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE autotune_steps SET note = ? WHERE sweep_id = ? AND seq = ?",
            (note, sweep_id, seq),
        )


def store_scores(
    conn: sqlite3.Connection, sweep_id: int, steps: dict[int, int], scored: dict[int, float]
) -> None:
    """Each counted step (seq -> value) gets its value's score."""
    with db.write_transaction(conn):
        for seq, value in steps.items():
            conn.execute(
                "UPDATE autotune_steps SET score = ? WHERE sweep_id = ? AND seq = ?",
                (round(scored[value], 3), sweep_id, seq),
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


def interrupted(conn: sqlite3.Connection) -> sqlite3.Row | None:
    """The sweep a crash cut short (its row still says running), if any."""
    row: sqlite3.Row | None = conn.execute(
        "SELECT * FROM autotune_sweeps WHERE state = 'running'"
    ).fetchone()
    return row


def sweep_row(conn: sqlite3.Connection, sweep_id: int) -> sqlite3.Row:
    row: sqlite3.Row = conn.execute(
        "SELECT * FROM autotune_sweeps WHERE id = ?", (sweep_id,)
    ).fetchone()
    return row


def view(
    conn: sqlite3.Connection, running_id: int | None, now: SweepStepNow | None
) -> Sweep | None:
    """The latest sweep with its steps; `now` is the step measured now, when `running_id` (the
    sweep in memory) is that sweep."""
    row = conn.execute("SELECT * FROM autotune_sweeps ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    steps = conn.execute(
        "SELECT * FROM autotune_steps WHERE sweep_id = ? ORDER BY seq", (row["id"],)
    ).fetchall()
    state, reason = row["state"], row["reason"]
    if state == "running" and running_id != row["id"]:
        # Ended while its row could not be written (a full disk): recover() records it.
        state, reason = "ended", "its record waits for the disk to have room"
    return Sweep(
        id=row["id"],
        array=row["array"],
        state=state,
        reason=reason,
        started=row["started"],
        finished=row["finished"],
        start_values=json.loads(row["start_values"]),
        plan=json.loads(row["plan"]),
        chosen=json.loads(row["chosen"]) if row["chosen"] else None,
        steps=[
            SweepStep(
                knob=s["knob"],
                label=setting_label(s["knob"], int(s["value"])),
                value=int(s["value"]),
                role=s["role"],
                speed_kb_s=s["speed_kb_s"],
                score=s["score"],
                note=s["note"],
                measured_from=s["measured_from"],
                measured_to=s["measured_to"],
            )
            for s in steps
        ],
        now=now if running_id == row["id"] else None,
    )
