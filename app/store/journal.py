"""The tuning journal in SQLite: sessions, their knobs' originals, and every apply and revert.

Originals are recorded in the same transaction that opens the apply, before any kernel write, so a
crash at any point leaves enough on disk to put every knob back (tuned's "recover original values
in case of crash").
"""

import json
import sqlite3
from collections.abc import Sequence
from typing import Any, Protocol

from app.records import JournaledKnob, TuningOp
from app.shapes.tuning import Restored, Session
from app.store import db, history
from app.store.originals import Originals


class JournaledChange(Protocol):
    """What the journal keeps of one planned knob change (a tuning plan.KnobChange is one)."""

    @property
    def key(self) -> str: ...  # "stripe_cache_size@md2", or the knob name for a global knob
    @property
    def knob(self) -> str: ...
    @property
    def target(self) -> str | None: ...
    @property
    def from_value(self) -> str: ...  # as normalised from the kernel file
    @property
    def to_value(self) -> str: ...


def _session(row: sqlite3.Row) -> Session:
    return Session(
        id=row["id"],
        started=row["started"],
        preset=row["preset"],
        arrays=json.loads(row["arrays"]),
        ended=row["ended"],
        end_reason=row["end_reason"],
    )


def open_session(conn: sqlite3.Connection) -> Session | None:
    row = conn.execute("SELECT * FROM tuning_sessions WHERE ended IS NULL").fetchone()
    return _session(row) if row else None


def last_session(conn: sqlite3.Connection) -> Session | None:
    """The newest session, open or ended."""
    row = conn.execute("SELECT * FROM tuning_sessions ORDER BY id DESC LIMIT 1").fetchone()
    return _session(row) if row else None


def session_knobs(conn: sqlite3.Connection, session_id: int) -> list[JournaledKnob]:
    rows = conn.execute(
        "SELECT key, knob, target, original, desired FROM tuning_knobs"
        " WHERE session_id = ? ORDER BY rowid",
        (session_id,),
    )
    return [JournaledKnob(**dict(r)) for r in rows]


_OP = "SELECT id, session_id, kind, preset, started, finished, state, error FROM tuning_ops"


def unfinished_ops(conn: sqlite3.Connection) -> list[TuningOp]:
    rows = conn.execute(f"{_OP} WHERE state = 'in_progress' ORDER BY id")
    return [TuningOp(**dict(r)) for r in rows]


def ops_after(conn: sqlite3.Connection, op_id: int) -> list[TuningOp]:
    """Every apply and revert journaled after `op_id`, oldest first."""
    return [TuningOp(**dict(r)) for r in conn.execute(f"{_OP} WHERE id > ? ORDER BY id", (op_id,))]


def newest_op_id(conn: sqlite3.Connection) -> int:
    """The newest apply's or revert's id; 0 before the first."""
    return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM tuning_ops").fetchone()[0])


def begin_apply(
    conn: sqlite3.Connection,
    preset: str,
    arrays: list[str],
    changes: Sequence[JournaledChange],
    now: float,
) -> tuple[int, int]:
    """Record originals (once per session) and the intended changes; returns (session, op)."""
    with db.write_transaction(conn):
        session = open_session(conn)
        if session is None:
            session_id = conn.execute(
                "INSERT INTO tuning_sessions (started, preset, arrays) VALUES (?, ?, '[]')",
                (now, preset),
            ).lastrowid
        else:
            session_id = session.id
        assert session_id is not None
        for change in changes:
            # INSERT OR IGNORE: a second preset keeps the true originals of the first.
            conn.execute(
                "INSERT OR IGNORE INTO tuning_knobs"
                " (session_id, key, knob, target, original, desired) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    change.key,
                    change.knob,
                    change.target,
                    change.from_value,
                    change.to_value,
                ),
            )
        op_id = conn.execute(
            "INSERT INTO tuning_ops (session_id, kind, preset, started, state, changes, arrays)"
            " VALUES (?, 'apply', ?, ?, 'in_progress', ?, ?)",
            (
                session_id,
                preset,
                now,
                json.dumps([_change_json(c) for c in changes]),
                json.dumps(arrays),
            ),
        ).lastrowid
        assert op_id is not None
    return session_id, op_id


def finish_apply(
    conn: sqlite3.Connection,
    session_id: int,
    op_id: int,
    preset: str,
    arrays: list[str],
    changes: Sequence[JournaledChange],
    now: float,
    step: str | None = None,
) -> Session:
    """Mark an apply done and return its session as the apply leaves it; `step` labels one step
    of an auto-tune sweep: its event is kind 'autotune' with that label, and it gets no
    before/after effect of its own."""
    with db.write_transaction(conn):
        for change in changes:
            conn.execute(
                "UPDATE tuning_knobs SET desired = ? WHERE session_id = ? AND key = ?",
                (change.to_value, session_id, change.key),
            )
        row = conn.execute("SELECT * FROM tuning_sessions WHERE id = ?", (session_id,)).fetchone()
        all_arrays = sorted(set(json.loads(row["arrays"])) | set(arrays))
        conn.execute(
            "UPDATE tuning_sessions SET preset = ?, arrays = ? WHERE id = ?",
            (preset, json.dumps(all_arrays), session_id),
        )
        session = _session(row).model_copy(update={"preset": preset, "arrays": all_arrays})
        conn.execute(
            "UPDATE tuning_ops SET state = 'done', finished = ? WHERE id = ?", (now, op_id)
        )
        for array in arrays:
            run = history.open_run(conn, array)
            detail = {"preset": preset, "op_id": op_id, "changes": len(changes)}
            if step is not None:
                history.add_event(
                    conn,
                    now,
                    array,
                    run.id if run else None,
                    "autotune",
                    detail | {"label": step},
                )
                continue
            history.add_event(conn, now, array, run.id if run else None, "apply", detail)
            conn.execute(
                "INSERT INTO tuning_effects (op_id, array, run_id, preset, applied_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (op_id, array, run.id if run else None, preset, now),
            )
    return session


def abandon_apply(
    conn: sqlite3.Connection, session_id: int, op_id: int, error: str, now: float
) -> None:
    """The apply was rolled back: forget knobs it added, end the session if it opened it."""
    with db.write_transaction(conn):
        conn.execute(
            "UPDATE tuning_ops SET state = 'rolled_back', finished = ?, error = ? WHERE id = ?",
            (now, error, op_id),
        )
        done_before = conn.execute(
            "SELECT COUNT(*) FROM tuning_ops"
            " WHERE session_id = ? AND kind = 'apply' AND state = 'done'",
            (session_id,),
        ).fetchone()[0]
        if done_before == 0:
            conn.execute("DELETE FROM tuning_knobs WHERE session_id = ?", (session_id,))
            conn.execute(
                "UPDATE tuning_sessions SET ended = ?, end_reason = ? WHERE id = ?",
                (now, "first apply rolled back", session_id),
            )
        else:
            # Knobs first touched by this apply are back at their originals: drop them.
            op = conn.execute("SELECT changes FROM tuning_ops WHERE id = ?", (op_id,)).fetchone()
            for change in json.loads(op["changes"]):
                conn.execute(
                    "DELETE FROM tuning_knobs WHERE session_id = ? AND key = ? AND original = ?",
                    (session_id, change["key"], change["from"]),
                )


def begin_revert(conn: sqlite3.Connection, session_id: int, reason: str, now: float) -> int:
    with db.write_transaction(conn):
        return _insert_revert(conn, session_id, reason, now)


def _insert_revert(conn: sqlite3.Connection, session_id: int, reason: str, now: float) -> int:
    conn.execute(
        "UPDATE tuning_ops SET state = 'failed', finished = ?, error = ? "
        "WHERE session_id = ? AND state = 'in_progress'",
        (now, "interrupted: mdboost stopped before it finished", session_id),
    )
    op_id = conn.execute(
        "INSERT INTO tuning_ops (session_id, kind, started, state, error)"
        " VALUES (?, 'revert', ?, 'in_progress', ?)",
        (session_id, now, reason),
    ).lastrowid
    assert op_id is not None
    return op_id


def finish_revert(
    conn: sqlite3.Connection,
    session_id: int,
    op_id: int | None,
    reason: str,
    restored: Sequence[Restored],
    errors: list[str],
    started: float,
    now: float,
    gone: list[str] | None = None,
) -> int:
    """Record a revert's outcome; knobs whose array or disk is `gone` leave the session even if
    it stays open. `op_id` None: the revert's start was never journaled (disk full)."""
    gone = gone or []
    with db.write_transaction(conn):
        if op_id is None:
            op_id = _insert_revert(conn, session_id, reason, started)
        state = "failed" if errors else "done"
        # What was put back as the API's answer shows it ("from", not from_), then what is gone.
        changes = [r.model_dump(by_alias=True) for r in restored]
        changes += [{"key": key, "gone": True} for key in gone]
        conn.execute(
            "UPDATE tuning_ops SET state = ?, finished = ?, changes = ?, error = ? WHERE id = ?",
            (state, now, json.dumps(changes), "; ".join(errors) or reason, op_id),
        )
        conn.executemany(
            "DELETE FROM tuning_knobs WHERE session_id = ? AND key = ?",
            [(session_id, key) for key in gone],
        )
        if errors:
            return op_id
        conn.execute(
            "UPDATE tuning_sessions SET ended = ?, end_reason = ? WHERE id = ?",
            (now, reason, session_id),
        )
        session = conn.execute(
            "SELECT arrays FROM tuning_sessions WHERE id = ?", (session_id,)
        ).fetchone()
        for array in json.loads(session["arrays"]):
            run_id = history.open_run_id(conn, array)
            if run_id is None:
                last = history.last_run(conn, array)
                run_id = last.id if last else None
            detail = {"op_id": op_id, "reason": reason, "restored": len(restored)}
            history.add_event(conn, now, array, run_id, "revert", detail)
    return op_id


def _change_json(change: JournaledChange) -> dict[str, Any]:
    return {
        "key": change.key,
        "knob": change.knob,
        "target": change.target,
        "from": change.from_value,
        "to": change.to_value,
    }


def session_originals(conn: sqlite3.Connection, session_id: int) -> Originals:
    """A session and its knobs as the originals file keeps them, in one statement (each apply
    asks): the session's columns ride on each of its knobs' rows, or on one row of no knob."""
    rows = conn.execute(
        "SELECT s.id, s.started, s.preset, s.arrays, k.key, k.knob, k.target, k.original,"
        " k.desired FROM tuning_sessions s LEFT JOIN tuning_knobs k ON k.session_id = s.id"
        " WHERE s.id = ? ORDER BY k.rowid",
        (session_id,),
    ).fetchall()
    session = rows[0]
    return Originals(
        session_id=session["id"],
        started=session["started"],
        preset=session["preset"],
        arrays=tuple(json.loads(session["arrays"])),
        knobs=tuple(
            JournaledKnob(r["key"], r["knob"], r["target"], r["original"], r["desired"])
            for r in rows
            if r["key"] is not None
        ),
    )


def session_ended(conn: sqlite3.Connection, session_id: int) -> bool:
    """Whether this database holds the session, ended: an originals file naming it is stale."""
    row = conn.execute(
        "SELECT ended IS NOT NULL FROM tuning_sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return bool(row and row[0])


def restore_session(conn: sqlite3.Connection, found: Originals, source: str, now: float) -> int:
    """Open again, in this database, a session found outside it (the originals file, a damaged
    database moved aside); an event on each of its arrays says where it came from."""
    with db.write_transaction(conn):
        session_id = conn.execute(
            "INSERT INTO tuning_sessions (started, preset, arrays) VALUES (?, ?, ?)",
            (found.started, found.preset, json.dumps(list(found.arrays))),
        ).lastrowid
        assert session_id is not None
        conn.executemany(
            "INSERT OR IGNORE INTO tuning_knobs"
            " (session_id, key, knob, target, original, desired) VALUES (?, ?, ?, ?, ?, ?)",
            [(session_id, k.key, k.knob, k.target, k.original, k.desired) for k in found.knobs],
        )
        detail = {"source": source, "knobs": len(found.knobs), "preset": found.preset}
        for array in found.arrays or (None,):
            run = history.open_run(conn, array) if array else None
            history.add_event(conn, now, array, run.id if run else None, "session_restored", detail)
    return session_id
