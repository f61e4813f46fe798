"""Measured effect of a preset: the run's mean speed in the minutes before and after the apply.

Speeds come from progress (done blocks over time), not from the kernel's speed= figure, which lags
by its ~30 s window. The after-window starts after a short settle and ends early at the next
apply or revert on that array, so each figure describes one regime.
"""

import sqlite3

from app.records import MeasuredEffect
from app.shapes.tuning import Effect
from app.store import db
from app.store.history import FROM_UNTUNED

SETTLE_S = 30.0
MIN_COVERAGE = 0.5  # a window needs samples over at least half its length


def mean_speed_kb_s(
    conn: sqlite3.Connection, run_id: int, start: float, end: float
) -> float | None:
    """Mean KiB/s of a run between two times, from its first and last sample in that span."""
    if end <= start:
        return None  # the after-window of an apply still settling: nothing to ask
    first_ts, last_ts, first, last = conn.execute(_SPAN, (run_id, start, end)).fetchone()
    # An empty span (an apply at the same second as the change before it) measures nothing.
    if first_ts is None or last_ts <= first_ts or last_ts - first_ts < MIN_COVERAGE * (end - start):
        return None
    return float(max(last - first, 0) / (last_ts - first_ts))


# The span's first and last sample with progress, and the progress of each, in one statement.
_SPAN = """
    WITH span(first_ts, last_ts) AS (
        SELECT MIN(ts), MAX(ts) FROM samples
        WHERE run_id = ?1 AND ts >= ?2 AND ts <= ?3 AND done_blocks IS NOT NULL
    )
    SELECT first_ts, last_ts,
        (SELECT done_blocks FROM samples WHERE run_id = ?1 AND ts = first_ts),
        (SELECT done_blocks FROM samples WHERE run_id = ?1 AND ts = last_ts)
    FROM span
"""


def _neighbours(
    conn: sqlite3.Connection, array: str, ts: float
) -> tuple[float | None, float | None]:
    """The array's tuning changes (apply, revert, auto-tune step) just before and just after
    `ts`, in one statement; None where there is none."""
    row = conn.execute(_NEIGHBOURS, {"array": array, "ts": ts}).fetchone()
    return row[0], row[1]


_CHANGES = "SELECT ts FROM events WHERE array = :array AND kind IN ('apply', 'revert', 'autotune')"
_NEIGHBOURS = f"""
    SELECT ({_CHANGES} AND ts < :ts ORDER BY ts DESC LIMIT 1),
           ({_CHANGES} AND ts > :ts ORDER BY ts ASC LIMIT 1)
"""


def _measure(conn: sqlite3.Connection, effect: sqlite3.Row, window_s: float, now: float) -> Effect:
    """The effect (a row of _EFFECTS) as far as it can be measured now; `complete` once the
    after-window is over."""
    applied = effect["applied_at"]
    before, after = effect["before_kb_s"], effect["after_kb_s"]
    complete = effect["measured_at"] is not None
    over = effect["over"]
    if not complete and effect["run_id"] is not None:
        previous, following = _neighbours(conn, effect["array"], applied)
        before_start = max(applied - window_s, previous or 0.0)
        after_start = applied + SETTLE_S
        after_end = min(after_start + window_s, following or float("inf"))
        before = mean_speed_kb_s(conn, effect["run_id"], before_start, applied)
        after = mean_speed_kb_s(conn, effect["run_id"], after_start, min(after_end, now))
        complete = now >= after_end
    ratio = round(after / before, 2) if before and after is not None else None
    name = effect["preset"] + (f" over {over}" if over else "")
    return Effect(
        op_id=effect["op_id"],
        array=effect["array"],
        run_id=effect["run_id"],
        preset=effect["preset"],
        applied_at=applied,
        before_kb_s=before,
        after_kb_s=after,
        ratio=ratio,
        complete=complete,
        over=over,
        summary=summary(name, before, after, ratio, complete),
    )


# Each effect with the preset its session held when its apply came (`over`; NULL: the apply
# opened the session), so an effect of boost over auto-tune is read as that, not as boost's own:
# read with the effect, not asked once more for each of the page's twenty.
_EFFECTS = """
    SELECT tuning_effects.*, (
        SELECT earlier.preset FROM tuning_ops this JOIN tuning_ops earlier
            ON earlier.session_id = this.session_id AND earlier.id < this.id
        WHERE this.id = tuning_effects.op_id AND earlier.kind = 'apply' AND earlier.state = 'done'
        ORDER BY earlier.id DESC LIMIT 1
    ) AS over FROM tuning_effects
"""


def summary(
    preset: str, before: float | None, after: float | None, ratio: float | None, complete: bool
) -> str:
    """'boost: 6.0 → 27.2 MB/s, ×4.5' (MB = 10^6 bytes, as disks are sold)."""
    if before is None or after is None:
        return (
            f"{preset}: measuring…" if not complete else f"{preset}: not enough samples to measure"
        )
    text = f"{preset}: {before * 1.024 / 1000:.1f} → {after * 1.024 / 1000:.1f} MB/s"
    if ratio is not None:
        text += f", ×{ratio:.1f}"
    return text if complete else text + " (measuring)"


def settle(conn: sqlite3.Connection, window_s: float, now: float) -> list[Effect]:
    """Store every effect whose after-window is over; returns them."""
    pending = conn.execute(f"{_EFFECTS} WHERE measured_at IS NULL").fetchall()
    stored = []
    for effect in pending:
        measured = _measure(conn, effect, window_s, now)
        if not measured.complete:
            continue
        with db.write_transaction(conn):
            conn.execute(
                "UPDATE tuning_effects SET before_kb_s = ?, after_kb_s = ?, ratio = ?, "
                "measured_at = ? WHERE op_id = ? AND array = ?",
                (
                    measured.before_kb_s,
                    measured.after_kb_s,
                    measured.ratio,
                    now,
                    effect["op_id"],
                    effect["array"],
                ),
            )
        stored.append(measured)
    return stored


def recent(conn: sqlite3.Connection, window_s: float, now: float, limit: int = 20) -> list[Effect]:
    rows = conn.execute(f"{_EFFECTS} ORDER BY applied_at DESC LIMIT ?", (limit,)).fetchall()
    return [_measure(conn, row, window_s, now) for row in rows]


def latest_ratio(conn: sqlite3.Connection, preset: str, array: str) -> float | None:
    """This array's latest fully measured effect of a preset over the untuned pace (speed
    after / before)."""
    row = conn.execute(
        "SELECT ratio FROM tuning_effects WHERE array = ? AND preset = ? "
        f"AND measured_at IS NOT NULL AND ratio > 0 AND {FROM_UNTUNED} "
        "ORDER BY applied_at DESC LIMIT 1",
        (array, preset),
    ).fetchone()
    return float(row[0]) if row else None


def latest_measured(conn: sqlite3.Connection, preset: str) -> MeasuredEffect | None:
    """The box's latest fully measured effect of a preset on any array, whatever it was applied
    over."""
    row = conn.execute(
        f"SELECT array, ratio, {FROM_UNTUNED} FROM tuning_effects WHERE preset = ? "
        "AND measured_at IS NOT NULL AND ratio > 0 ORDER BY applied_at DESC LIMIT 1",
        (preset,),
    ).fetchone()
    return MeasuredEffect(str(row[0]), float(row[1]), bool(row[2])) if row else None


def untuned_speed(conn: sqlite3.Connection, session_id: int, array: str) -> float | None:
    """KiB/s of the array before the open session tuned it: the "before" of the apply that
    opened it, else the first step of an auto-tune sweep in it (the values it found)."""
    row = conn.execute(
        "SELECT before_kb_s FROM tuning_effects JOIN tuning_ops ON tuning_ops.id = op_id"
        f" WHERE tuning_ops.session_id = ? AND array = ? AND {FROM_UNTUNED}"
        " AND before_kb_s > 0 LIMIT 1",
        (session_id, array),
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT speed_kb_s FROM autotune_steps JOIN autotune_sweeps ON id = sweep_id"
            " WHERE session_id = ? AND array = ? AND role = 'start' AND speed_kb_s > 0"
            " ORDER BY id, seq LIMIT 1",
            (session_id, array),
        ).fetchone()
    return float(row[0]) if row else None
