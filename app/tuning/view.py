"""The read side of tuning (GET /api/tuning, the boost panel): session, knobs, effects, RAM."""

from dataclasses import asdict, dataclass

from app.live.forecasts import JournalNow
from app.live.knobs import journaled_knobs
from app.live.snapshot import KnobNow, Snapshot
from app.md.knobs import budget_from_available, stripe_cache_mib
from app.shapes.tuning import (
    Effect,
    KnobAccessBody,
    MeasuringWithout,
    PresetBody,
    PresetErrorBody,
    PresetKnob,
    Presets,
    Ram,
    Schedules,
    Session,
    SessionKnob,
    SlowerFinding,
    Sweep,
    TuningStatus,
)
from app.store import db, effects
from app.store.slower import SlowerPreset
from app.tuning.planning.knob_plan import member_disks
from app.tuning.planning.presets import PresetError
from app.tuning.session.policy import slower_sentence
from app.tuning.tuner import Tuner


@dataclass(frozen=True)
class TuningFacts:
    """What is tuned, read once per request: the journal (its open session, the presets put
    back), the schedules and the latest sweep; the tuning status and the page's views share it."""

    journal: JournalNow
    schedules: Schedules
    sweep: Sweep | None


def facts(tuner: Tuner, conn: db.Connection) -> TuningFacts:
    return TuningFacts(
        JournalNow.read(conn), tuner.scheduler.view(conn, tuner.clock()), tuner.autotuner.view(conn)
    )


def status(
    tuner: Tuner, conn: db.Connection, snapshot: Snapshot, known: TuningFacts | None = None
) -> TuningStatus:
    """Whether a preset is on comes from the journal's open session (its one source); what the
    kernel holds, the RAM and each knob's access from the sampler's last tick (`snapshot`).
    `known`: the facts as the caller read them already; else they are read here."""
    found = known or facts(tuner, conn)
    session = found.journal.session
    unrecorded = session is not None and tuner.applier.awaiting_record(session.id)
    if unrecorded:
        session = None  # the kernel has the originals; only the journal's record waits
    max_cache_mb = tuner.settings.max_cache_mb
    budget = (
        max_cache_mb
        if max_cache_mb is not None
        else budget_from_available((snapshot.available_kib or 0) / 1024)
    )
    # The stripe caches as the tick read them, or as a later write read them back.
    written = {
        k.target: int(k.current)
        for k in snapshot.knobs
        if k.knob == "stripe_cache_size" and k.current is not None and k.current.isdigit()
    }
    cost = sum(
        stripe_cache_mib(
            written.get(state.name, state.sysfs.stripe_cache_size), member_disks(state.array)
        )
        for state in snapshot.arrays
        if state.sysfs is not None and state.sysfs.stripe_cache_size is not None
    )
    sweep = found.sweep
    return TuningStatus(
        state=snapshot.job.tuned,
        active=session is not None,
        preset=session.preset if session else None,
        session=session,
        busy=tuner.operation.locked(),
        # A revert done in the kernel that the journal could not record yet (disk full).
        unrecorded_revert=unrecorded,
        knobs=_knobs(conn, session, snapshot) if session else [],
        # Effect rows as app/store/effects.py measures them (validated into Effect here).
        effects=recent_effects(tuner, conn),
        ram=Ram(budget_mib=round(budget, 1), cost_mib=round(cost, 1)),
        capabilities=[
            KnobAccessBody(knob=c.knob, target=c.target, supported=c.supported, writable=c.writable)
            for c in snapshot.knob_access
        ],
        preset_errors=[preset_error(e) for e in tuner.preset_errors],
        autotune=sweep,
        slower=_slower(found.journal.latest_put_back(), snapshot),
        restarted=tuner.restarted_note(session),
        measuring_without=_measuring_without(tuner),
    )


def recent_effects(tuner: Tuner, conn: db.Connection) -> list[Effect]:
    """The latest applies' effects, measured as far as their window allows."""
    return effects.recent(conn, tuner.settings.effect_minutes * 60, tuner.clock())


def _measuring_without(tuner: Tuner) -> MeasuringWithout | None:
    owed = tuner.policy.measuring
    if owed is None:
        return None
    return MeasuringWithout(
        preset=owed.preset,
        arrays=list(owed.arrays),
        since=owed.started,
        back_at=owed.back_at,
        reason=owed.reason,
    )


def _slower(found: SlowerPreset | None, snapshot: Snapshot) -> SlowerFinding | None:
    """The latest preset put back for making a sync slower, while that sync's run is open."""
    state = snapshot.array(found.array) if found is not None else None
    if found is None or state is None or state.run is None or state.run.id != found.run_id:
        return None
    return SlowerFinding(
        array=found.array,
        preset=found.preset,
        found_at=found.found_at,
        ratio=round(found.ratio, 2),
        sentence=slower_sentence(found),
    )


def presets(tuner: Tuner) -> Presets:
    """GET /api/presets: the presets loaded, and the errors of the files that were not."""
    return Presets(
        presets=[
            PresetBody(
                name=p.name,
                summary=p.summary,
                source=p.source,
                restore_originals=p.restore_originals,
                knobs=[PresetKnob(knob=s.knob, value=s.value, reason=s.reason) for s in p.settings],
            )
            for p in tuner.presets.values()
        ],
        errors=[preset_error(e) for e in tuner.preset_errors],
    )


def preset_error(error: PresetError) -> PresetErrorBody:
    return PresetErrorBody(file=error.file, key=error.key, message=error.message)


def _knobs(conn: db.Connection, session: Session, snapshot: Snapshot) -> list[SessionKnob]:
    """The session's knobs as the present holds them: what mdboost last wrote and what the
    kernel held, from one reading (a tick's, or a write's own read-back), so that drift is
    never judged between a new write and an older reading. A session newer than the
    present (its write is still being published): the journal's, current unknown."""
    if snapshot.session_id == session.id:
        knobs = list(snapshot.knobs)
    else:
        knobs = journaled_knobs(conn, session, lambda key, knob, target: None)
    return [session_knob(k) for k in knobs]


def session_knob(k: KnobNow) -> SessionKnob:
    """The API's shape of a session knob: the same fields, validated."""
    return SessionKnob(**asdict(k))
