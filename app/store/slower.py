"""Presets that made a sync on this box slower and were put back by mdboost, and the applies
still waiting for that comparison: the only SQL of the never-slower check."""

import json
import sqlite3
from dataclasses import dataclass

from app.store import db, history


@dataclass(frozen=True)
class Applied:
    """One array's part of an apply in the open session, as its effect row has it."""

    op_id: int
    array: str
    run_id: int | None
    preset: str
    applied_at: float  # unix seconds


@dataclass(frozen=True)
class SlowerPreset:
    """A preset found slower than the pace before it, in like conditions, and put back."""

    found_at: float  # unix seconds
    op_id: int
    array: str
    run_id: int | None
    action: str
    preset: str
    kernel_release: str | None
    before_kb_s: float  # KiB/s
    after_kb_s: float  # KiB/s
    noise_kb_s: float  # KiB/s: two standard errors of the difference
    other_io: bool
    md_thread: str | None
    md_thread_cores: float | None
    knobs: tuple[str, ...]

    @property
    def ratio(self) -> float:
        return self.after_kb_s / self.before_kb_s


def latest_apply(conn: sqlite3.Connection, session_id: int) -> list[Applied]:
    """Each array's part of the session's latest apply, when it has a before/after effect (an
    auto-tune step has none: the sweep measures itself)."""
    rows = conn.execute(
        "SELECT op_id, array, tuning_effects.run_id, tuning_effects.preset, applied_at"
        " FROM tuning_effects WHERE op_id = (SELECT MAX(id) FROM tuning_ops"
        " WHERE session_id = ? AND kind = 'apply' AND state = 'done') ORDER BY array",
        (session_id,),
    ).fetchall()
    return [Applied(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]


def record(conn: sqlite3.Connection, found: SlowerPreset, sentence: str) -> None:
    """Remember it, with an event on its run saying `sentence` (the chart's marker and the
    notification)."""
    with db.write_transaction(conn):
        conn.execute(
            "INSERT INTO slower_presets (found_at, op_id, array, run_id, action, preset,"
            " kernel_release, before_kb_s, after_kb_s, noise_kb_s, other_io, md_thread,"
            " md_thread_cores, knobs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                found.found_at,
                found.op_id,
                found.array,
                found.run_id,
                found.action,
                found.preset,
                found.kernel_release,
                found.before_kb_s,
                found.after_kb_s,
                found.noise_kb_s,
                int(found.other_io),
                found.md_thread,
                found.md_thread_cores,
                json.dumps(list(found.knobs)),
            ),
        )
        history.add_event(
            conn,
            found.found_at,
            found.array,
            found.run_id,
            "slower",
            {
                "preset": found.preset,
                "op_id": found.op_id,
                "before_kb_s": round(found.before_kb_s),
                "after_kb_s": round(found.after_kb_s),
                "noise_kb_s": round(found.noise_kb_s),
                "ratio": round(found.ratio, 2),
                "sentence": sentence,
            },
        )


def judged(conn: sqlite3.Connection, op_id: int, array: str) -> bool:
    """This apply was already found slower on this array (a restart must not judge it twice)."""
    row = conn.execute(
        "SELECT 1 FROM slower_presets WHERE op_id = ? AND array = ?", (op_id, array)
    ).fetchone()
    return row is not None


def latest(conn: sqlite3.Connection, preset: str | None = None) -> SlowerPreset | None:
    """The box's latest finding for `preset` (None: for any), on any array."""
    return next((f for f in latest_each(conn) if preset in (None, f.preset)), None)


def latest_each(conn: sqlite3.Connection) -> list[SlowerPreset]:
    """The box's latest finding of each preset, newest first: one read answers both "the latest
    put back" and "the latest of boost"."""
    rows = conn.execute(
        "SELECT found_at, op_id, array, run_id, action, preset, kernel_release, before_kb_s,"
        " after_kb_s, noise_kb_s, other_io, md_thread, md_thread_cores, knobs FROM"
        " (SELECT *, ROW_NUMBER() OVER (PARTITION BY preset ORDER BY found_at DESC, id DESC)"
        " AS newest FROM slower_presets)"
        " WHERE newest = 1 ORDER BY found_at DESC, id DESC",
    ).fetchall()
    return [_finding(row) for row in rows]


def _finding(row: sqlite3.Row) -> SlowerPreset:
    return SlowerPreset(
        found_at=float(row[0]),
        op_id=int(row[1]),
        array=str(row[2]),
        run_id=row[3],
        action=str(row[4]),
        preset=str(row[5]),
        kernel_release=row[6],
        before_kb_s=float(row[7]),
        after_kb_s=float(row[8]),
        noise_kb_s=float(row[9]),
        other_io=bool(row[10]),
        md_thread=row[11],
        md_thread_cores=row[12],
        knobs=tuple(json.loads(row[13])),
    )
