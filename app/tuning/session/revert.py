"""What a revert writes: each journaled knob's way back, from what the kernel shows now (md's
floors, a vanished array or disk); and a revert the journal could not record yet."""

import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

from app.kernel.host import Host
from app.kernel.knobs import read_knob
from app.live import array_view
from app.md import mdstat
from app.md.knobs import CATALOGUE, Knob, md_floor
from app.store import journal
from app.tuning.planning.knob_plan import KnobChange

log = logging.getLogger(__name__)


@dataclass
class UnrecordedRevert:
    """A revert the kernel has seen but the journal has not yet: written when the disk has room."""

    session_id: int
    op_id: int | None  # None: even the revert's start could not be journaled
    reason: str
    restored: list[dict[str, Any]]
    gone: list[str]
    started: float
    finished: float


def unrecorded_message(pending: UnrecordedRevert | None, why: str) -> str:
    count = len(pending.restored) if pending else 0
    return (
        f"the kernel holds the original values again ({count} knobs), but the tuning journal "
        f"cannot record that revert ({why}): mdboost records it as soon as the disk has room"
    )


def record_revert(conn: sqlite3.Connection, pending: UnrecordedRevert) -> bool:
    """Journal a revert the kernel has seen already; False while the disk still has no room."""
    try:
        journal.finish_revert(
            conn,
            pending.session_id,
            pending.op_id,
            pending.reason,
            pending.restored,
            [],
            pending.started,
            pending.finished,
            pending.gone,
        )
    except sqlite3.Error:
        return False
    return True


def revert_steps(
    host: Host, conn: sqlite3.Connection, session_id: int
) -> tuple[list[KnobChange], list[str], list[str]]:
    """The writes that put a session's knobs back, the keys whose array or disk is gone, and the
    knobs that cannot be reverted (one knob never stops the others)."""
    try:
        md = array_view.current(host)
    except (OSError, ValueError) as error:  # no floors then, but the originals still go back
        log.warning("revert without md's geometry: %s", error)
        md = mdstat.MdStat(None, ())
    steps: list[KnobChange] = []
    gone: list[str] = []
    errors: list[str] = []
    for row in journal.session_knobs(conn, session_id):
        try:
            step = _revert_step(host, row, md)
        except (OSError, ValueError) as error:
            errors.append(f"{row['key']}: cannot revert: {error}")
            continue
        if step is None:
            gone.append(row["key"])
        else:
            steps.append(step)
    return steps, gone, errors


def _target_gone(host: Host, knob: Knob, target: str | None, md: mdstat.MdStat) -> bool:
    """Whether the array (no longer in mdstat) or disk (no longer in /sys/block) is gone."""
    if knob.scope == "array":
        return md.array(target or "") is None
    if knob.scope == "member":
        return not host.has_block_device(target or "")
    return False


def _revert_step(host: Host, row: sqlite3.Row, md: mdstat.MdStat) -> KnobChange | None:
    """The write that puts one journaled knob back, from what the kernel shows now; None
    when its array or disk is gone."""
    if row["knob"] not in CATALOGUE:
        raise ValueError(f"{row['knob']!r} is not in this version's catalogue")
    knob = CATALOGUE[row["knob"]]
    current = read_knob(host, knob, row["target"])
    if current is None and _target_gone(host, knob, row["target"], md):
        return None
    return KnobChange(
        row["key"],
        row["knob"],
        row["target"],
        knob.unit,
        row["desired"] if current is None else current,
        _revert_target(row, md),
        "",
    )


def _revert_target(row: sqlite3.Row, md: mdstat.MdStat) -> str:
    """The journaled original, unless md itself needs more now (new geometry, a reshape)."""
    original: str = row["original"]
    array = md.array(row["target"]) if row["target"] else None
    if array is None or not original.isdigit():
        return original
    reshaping = array.sync is not None and array.sync.action == "reshape"
    floor = md_floor(row["knob"], array.level, array.chunk_kb, array.raid_disks, reshaping)
    if floor is None or floor <= int(original):
        return original
    log.info(
        "%s: keeping %d, not the original %s: md needs at least that on %s now",
        row["key"],
        floor,
        original,
        array.name,
    )
    return str(floor)
