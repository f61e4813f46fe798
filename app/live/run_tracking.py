"""A run's life in SQLite: when a sync's run starts, restarts or ends, and how it ended (md has
no "finished" flag)."""

import logging
import sqlite3
from typing import Any

from app.forecast.model import RESTART_DROP
from app.kernel.host import ARRAY_NAME, Host
from app.live.tick import FinishedRun
from app.md import mdstat

log = logging.getLogger(__name__)


def track(
    conn: sqlite3.Connection,
    host: Host,
    array: mdstat.Array,
    row: dict[str, Any],
    run: sqlite3.Row | None,
    now: float,
    finished: list[FinishedRun],
) -> int | None:
    """The run this sample belongs to: the open one, else a new one when a sync runs (None when
    none does); ends the open run when the array went idle, changed action or restarted."""
    sync = array.sync if array.syncing else None
    if sync is None:
        if run is not None:
            outcome = _outcome_when_idle(conn, host, run, row, now)
            finish(conn, run, outcome, now, finished)
        return None
    if run is not None:
        if run["action"] != sync.action:
            finish(conn, run, "interrupted", now, finished)
        elif _restarted(conn, run, sync):
            finish(conn, run, "restarted", now, finished)
        else:
            return int(run["id"])
    cursor = conn.execute(
        "INSERT INTO runs (array, action, started, total_blocks) VALUES (?, ?, ?, ?)",
        (array.name, sync.action, now, sync.total_blocks),
    )
    log.info("%s: %s started (run %s)", array.name, sync.action, cursor.lastrowid)
    return cursor.lastrowid


def finish(
    conn: sqlite3.Connection,
    run: sqlite3.Row,
    outcome: str,
    now: float,
    finished: list[FinishedRun],
) -> None:
    """Close a run with its outcome (completed, interrupted, restarted, vanished)."""
    conn.execute(
        "UPDATE runs SET finished = ?, outcome = ? WHERE id = ?", (now, outcome, run["id"])
    )
    log.info("%s: %s run %s ended: %s", run["array"], run["action"], run["id"], outcome)
    finished.append(FinishedRun(run["id"], run["array"], run["action"], outcome))


def _last_sample(conn: sqlite3.Connection, run_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute(
        "SELECT done_blocks, total_blocks FROM samples WHERE run_id = ? ORDER BY ts DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    return row


def _restarted(conn: sqlite3.Connection, run: sqlite3.Row, sync: mdstat.Sync) -> bool:
    last = _last_sample(conn, run["id"])
    if last is None or last["done_blocks"] is None or sync.done_blocks is None:
        return False
    total = sync.total_blocks or last["total_blocks"] or 0
    return bool(total) and last["done_blocks"] - sync.done_blocks > RESTART_DROP * total


def _outcome_when_idle(
    conn: sqlite3.Connection, host: Host, run: sqlite3.Row, row: dict[str, Any], now: float
) -> str:
    """Completed or interrupted. md has no "finished" flag: ask what md keeps per action, else
    judge from the last sample, which on a real kernel can be far below 100 % when a short
    check or resync ends between two ticks (tests/realkernel)."""
    action, array = run["action"], run["array"]
    if action == "recovery" and row["degraded"] is not None:
        return "completed" if row["degraded"] == 0 else "interrupted"
    if action in ("resync", "reshape") and ARRAY_NAME.fullmatch(array):
        # resync_start and reshape_position read "none" once the job is done (md.rst).
        attr = "resync_start" if action == "resync" else "reshape_position"
        text = host.read(host.md_attr_path(array, attr))
        if text is not None:
            return "completed" if text.strip() == "none" else "interrupted"
    last = conn.execute(
        "SELECT ts, done_blocks, total_blocks, speed_kb_s FROM samples "
        "WHERE run_id = ? AND done_blocks IS NOT NULL ORDER BY ts DESC LIMIT 1",
        (run["id"],),
    ).fetchone()
    if last is None or not last["total_blocks"]:
        return "completed"
    remaining = last["total_blocks"] - last["done_blocks"]
    reachable = (last["speed_kb_s"] or 0) * max(now - last["ts"], 0.0)
    done = remaining <= 0.01 * last["total_blocks"] or reachable >= remaining
    return "completed" if done else "interrupted"
