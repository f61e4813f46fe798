"""What a revert writes: each journaled knob's way back, from what the kernel shows now (md's
floors, a vanished array or disk); and a revert the journal could not record yet."""

import logging
from dataclasses import dataclass

from app.kernel.host import Host
from app.kernel.knobs import read_knob
from app.live import array_view
from app.md import mdstat
from app.md.knobs import CATALOGUE, Knob, md_floor
from app.records import JournaledKnob
from app.shapes.tuning import Restored
from app.store import db, journal
from app.tuning.planning.knob_plan import KnobChange

log = logging.getLogger(__name__)


@dataclass
class UnrecordedRevert:
    """A revert the kernel has seen but the journal has not yet: written when the disk has room."""

    session_id: int
    op_id: int | None  # None: even the revert's start could not be journaled
    reason: str
    restored: list[Restored]
    gone: list[str]
    started: float
    finished: float


def unrecorded_message(pending: UnrecordedRevert | None, why: str) -> str:
    count = len(pending.restored) if pending else 0
    return (
        f"the kernel holds the original values again ({count} knobs), but the tuning journal "
        f"cannot record that revert ({why}): mdboost records it as soon as the disk has room"
    )


def record_revert(conn: db.Connection, pending: UnrecordedRevert) -> bool:
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
    except db.Error:
        return False
    return True


def revert_steps(
    host: Host, conn: db.Connection, session_id: int
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
    for journaled in journal.session_knobs(conn, session_id):
        try:
            step = _revert_step(host, journaled, md)
        except (OSError, ValueError) as error:
            errors.append(f"{journaled.key}: cannot revert: {error}")
            continue
        if step is None:
            gone.append(journaled.key)
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


def _revert_step(host: Host, journaled: JournaledKnob, md: mdstat.MdStat) -> KnobChange | None:
    """The write that puts one journaled knob back, from what the kernel shows now; None
    when its array or disk is gone."""
    if journaled.knob not in CATALOGUE:
        raise ValueError(f"{journaled.knob!r} is not in this version's catalogue")
    knob = CATALOGUE[journaled.knob]
    current = read_knob(host, knob, journaled.target)
    if current is None and _target_gone(host, knob, journaled.target, md):
        return None
    return KnobChange(
        journaled.key,
        journaled.knob,
        journaled.target,
        knob.unit,
        journaled.desired if current is None else current,
        _revert_target(journaled, md),
        "",
    )


def _revert_target(journaled: JournaledKnob, md: mdstat.MdStat) -> str:
    """The journaled original, unless md itself needs more now (new geometry, a reshape)."""
    original: str = journaled.original
    array = md.array(journaled.target) if journaled.target else None
    if array is None or not original.isdigit():
        return original
    reshaping = array.sync is not None and array.sync.action == "reshape"
    floor = md_floor(journaled.knob, array.level, array.chunk_kb, array.raid_disks, reshaping)
    if floor is None or floor <= int(original):
        return original
    log.info(
        "%s: keeping %d, not the original %s: md needs at least that on %s now",
        journaled.key,
        floor,
        original,
        array.name,
    )
    return str(floor)
