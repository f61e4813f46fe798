"""Start-up: find a session the database lost (the originals file, a damaged database moved
aside), then resume or revert a session that a stop or crash left open."""

import logging
from dataclasses import dataclass
from pathlib import Path

from app.kernel.host import ARRAY_NAME
from app.kernel.knobs import read_knob
from app.live import array_view
from app.md.knobs import CATALOGUE
from app.records import JournaledKnob
from app.shapes.tuning import Session
from app.store import journal, originals
from app.store.originals import Originals
from app.tuning.planning.knob_plan import knob_key
from app.tuning.session.apply import Applier, JournalUnavailable, TuningFailed
from app.tuning.session.policy import STOPPED, Policy, waits_for_the_job

log = logging.getLogger(__name__)

LOST_PRESET = "md's defaults (originals lost)"


@dataclass(frozen=True)
class Recovery:
    """What start-up did about a session the database did not hold (the page says it)."""

    source: str  # where the originals came from, or why they could not be found
    knobs: int  # how many knobs the session holds
    lost: bool  # True: md's own defaults were put back, the true originals are gone


def recover(applier: Applier, moved_now: Path | None) -> Recovery | None:
    """Bring back into the database an open session it lost; None when it lost none.

    The database is the journal while it holds an open session. Otherwise the originals file
    (or, when there is none, the damaged file moved aside this start) may hold one. When a
    session was open but its originals are unreadable everywhere, md's own defaults go back
    at once: knobs left boosted with no way back are worse than the kernel's defaults."""
    try:
        return _recover(applier, moved_now)
    except Exception:
        log.exception("looking for a session the database lost failed; mdboost starts anyway")
        return None


def _recover(applier: Applier, moved_now: Path | None) -> Recovery | None:
    conn = applier.conn
    if journal.open_session(conn) is not None:
        return None
    found: Originals | None = None
    source = f"the originals file {applier.originals_path}"
    try:
        found = originals.read(applier.originals_path)
        if found is None and moved_now is not None:
            source = f"the damaged database {moved_now}"
            found = originals.salvage(moved_now)
    except originals.Unreadable as error:
        return _put_back_defaults(applier, str(error))
    if found is None:
        return None
    if journal.session_ended(conn, found.session_id):
        log.info("%s names session %d, which has ended: removed", source, found.session_id)
        originals.remove(applier.originals_path)
        return None
    session_id = journal.restore_session(conn, found, source, applier.clock())
    applier.keep_originals(session_id)
    log.warning(
        "the database had lost tuning session %s (%s, %d knobs): restored from %s",
        found.session_id,
        found.preset,
        len(found.knobs),
        source,
    )
    return Recovery(source, len(found.knobs), lost=False)


def _put_back_defaults(applier: Applier, why: str) -> Recovery:
    """The originals are gone: journal md's defaults as the originals of every knob that
    differs from them now, and revert to them at once."""
    knobs = _defaults_now(applier)
    arrays = tuple(sorted({k.target for k in knobs if k.target and ARRAY_NAME.fullmatch(k.target)}))
    lost = Originals(-1, applier.clock(), LOST_PRESET, arrays, tuple(knobs))
    reason = f"the originals are lost ({why}): md's own defaults put back"
    log.error("%s on %d knobs", reason, len(knobs))
    journal.restore_session(applier.conn, lost, f"lost: {why}", applier.clock())
    try:
        applier.revert(reason, wait=True)
    except (TuningFailed, JournalUnavailable) as error:
        log.error("putting md's defaults back failed: %s", error)
    return Recovery(why, len(knobs), lost=True)


def _defaults_now(applier: Applier) -> list[JournaledKnob]:
    """Each knob of the catalogue whose kernel default is known and not what it holds now: the
    global limits and every array's own. Member disks' knobs differ by drive: left alone."""
    host = applier.host
    md = array_view.current(host)
    targets: list[tuple[str, str | None]] = [
        (knob.name, None) for knob in CATALOGUE.values() if knob.scope == "global"
    ]
    for array in md.arrays:
        if not ARRAY_NAME.fullmatch(array.name):
            continue
        for knob in CATALOGUE.values():
            if knob.scope != "array" or not knob.applies_to(array.level):
                continue
            if array.syncing and not knob.safe_while_syncing:
                continue
            targets.append((knob.name, array.name))
    found: list[JournaledKnob] = []
    for name, target in targets:
        knob = CATALOGUE[name]
        now = read_knob(host, knob, target)
        if now is None or now == knob.kernel_default:
            continue
        found.append(JournaledKnob(knob_key(name, target), name, target, knob.kernel_default, now))
    return found


def boot_of_last_write(applier: Applier) -> str | None:
    """The boot during which mdboost last wrote the open session's knobs, as its originals file
    says (read before recover() rewrites the file during this boot); None when unknown."""
    try:
        found = originals.read(applier.originals_path)
    except originals.Unreadable:
        return None
    return found.boot_id if found is not None else None


def knobs_forgotten(applier: Applier, session: Session, written_in: str | None) -> bool:
    """Whether the NAS restarted since mdboost wrote the session's knobs, so that the kernel
    holds md's values again rather than someone else having changed them: the boot id differs
    from the one of the last write or, without one, the kernel is younger than the session."""
    now_in = applier.host.boot_id
    if written_in is not None and now_in is not None:
        return written_in != now_in
    uptime = applier.host.read_uptime_s()
    return uptime is not None and uptime < applier.clock() - session.started


def _put_back_at_the_last_shutdown(applier: Applier) -> Session | None:
    """The newest session, when mdboost put it back as it stopped before the NAS last booted
    (a shutdown stops the container first): the owner had left it on."""
    last = journal.last_session(applier.conn)
    if last is None or last.end_reason != STOPPED or last.ended is None:
        return None
    uptime = applier.host.read_uptime_s()
    if uptime is None or applier.clock() - uptime < last.ended:
        return None
    return last


def reconcile(applier: Applier, policy: Policy, written_in: str | None = None) -> str | None:
    """Resume or revert a session left open by a stop or crash; returns what it did:
    "resumed", "reverted", "revert failed", "forgotten" (the NAS restarted: the session is
    closed without a kernel write) or "reapply" (the NAS restarted with the session open, or
    after mdboost put it back as it stopped, and the job it was for still runs: the newest
    session's preset goes on again). `written_in`: boot_of_last_write().

    Never raises: a start-up that fails here would crash-loop under `restart: unless-stopped`,
    and the open session would stay open anyway.
    """
    try:
        return _reconcile(applier, policy, written_in)
    except Exception:
        log.exception("reconciling the tuning journal failed; mdboost starts anyway")
        return "failed"


def _reconcile(applier: Applier, policy: Policy, written_in: str | None) -> str | None:
    session = journal.open_session(applier.conn)
    if session is None:
        stopped = _put_back_at_the_last_shutdown(applier)
        if stopped is None:
            return None
        why = policy.revert_reason(stopped)
        if why is not None and not waits_for_the_job(stopped, why):
            return None
        log.warning(
            "tuning session %s (%s) was put back as the NAS shut down; its job still runs",
            stopped.id,
            stopped.preset,
        )
        return "reapply"
    rebooted = knobs_forgotten(applier, session, written_in)
    why = policy.revert_reason(session, at_start=True, rebooted=rebooted)
    if rebooted:
        done = "reapply" if why is None or waits_for_the_job(session, why) else "forgotten"
        reason = (
            f"the NAS restarted and the kernel forgot mdboost's values{f'; {why}' if why else ''}"
        )
        log.warning("tuning session %s (%s): %s", session.id, session.preset, reason)
        with applier.exclusive(wait=True):
            applier.forget_locked(reason)
        return done
    if why is None:
        log.info(
            "resuming tuning session %s (%s): its arrays are still syncing",
            session.id,
            session.preset,
        )
        return "resumed"
    log.warning("reverting tuning session %s at start-up: %s", session.id, why)
    try:
        applier.revert(why, wait=True)
    except TuningFailed:
        return "revert failed"
    return "reverted"
