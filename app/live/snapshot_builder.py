"""SnapshotBuilder: the sampler owns the present. After each tick it builds one Snapshot from
what the tick read (mdstat, sysfs, the limits, the diagnosis), each open run's forecast kept up
incrementally (rebuilt once from SQLite, then one sample per tick) with boost's estimate and the
why-slow verdicts judged beside it, the job, the tuning session's knobs as the kernel holds them,
the stripe cache's RAM budget and which knobs this kernel has; then it replaces `snapshot` in one
assignment. Requests read `snapshot`, never the kernel nor the tuning journal's measurements.
"""

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from app.diagnosis.verdicts import Diagnosis
from app.forecast import model, physics
from app.forecast.boost import BoostEstimate
from app.kernel.access import knob_access
from app.kernel.host import ARRAY_NAME, Host
from app.live import forecasts
from app.live import job as jobs
from app.live.knobs import knob_states
from app.live.snapshot import ArrayNow, Job, KnobNow, MemberIO, Snapshot
from app.live.tick import Tick
from app.md.access import KnobAccess
from app.md.attributes import ArraySysfs
from app.md.mdstat import Array, MdStat
from app.shapes.tuning import Session, TuningState
from app.store import db, effects, history, journal


class SnapshotBuilder:
    """Holds the latest Snapshot: update() runs in the sampler's thread, requests read it."""

    def __init__(
        self,
        host: Host,
        conn: db.Connection,
        writes: "threading.Lock | None" = None,
        boost_max: float | None = None,
    ) -> None:
        self.host = host
        self.conn = conn
        self.boost_max = boost_max  # the max limit the boost preset writes, KiB/s
        # The tuning writer's lock: a tick reads the session's knobs and publishes them under it,
        # so a tick that read the kernel before a write never publishes after that write's
        # read-back (after_write) and shows mdboost's own value as "changed outside mdboost".
        self.writes = writes or threading.Lock()
        self.kernel_release = host.read_kernel_release()  # fixed while the system runs
        self.snapshot = Snapshot(kernel_release=self.kernel_release)
        self.progress: dict[int, model.RunProgress] = {}  # open run id -> its progress so far
        # A write since the last publish: the tick being published may have read the kernel
        # before it, so its verdicts were judged on the knobs before the write.
        self.written_since_publish = False
        # Which knobs the kernel has changes when arrays come or go: checked then, not each tick.
        self._access_cache: tuple[tuple[Any, ...], tuple[KnobAccess, ...]] = ((), ())
        # What the last tick read of boost's gain, per syncing array: a revert between two ticks
        # makes the estimate from it, with no SQL on this connection from the writer's thread.
        self.boost_evidence: dict[str, forecasts.BoostEvidence] = {}
        self.diagnoses: dict[str, Diagnosis] = {}  # the last tick's, as judged on its knobs
        self.reverted_since_publish = False

    def update(self, tick: Tick) -> None:
        if tick.parsed is None or tick.ts is None:
            return  # mdstat unreadable: keep the last picture; its timestamp tells it is old
        if tick.clock_step:
            # The sampler shifted the open runs onto the new wall time: read them again, once.
            self.progress = {}
        arrays: list[ArrayNow] = []
        progress: dict[int, model.RunProgress] = {}
        open_runs = history.open_runs_by_array(self.conn)
        for array in tick.parsed.arrays:
            sysfs = tick.sysfs.get(array.name)
            run = open_runs.get(array.name)
            forecast = None
            if run is not None and array.syncing:
                knee = (
                    physics.grow_knee(array.level, sysfs.raid_disks)
                    if run.action == "reshape" and sysfs is not None
                    else None
                )
                run_progress = self.progress.get(run.id) or forecasts.rebuild(
                    self.conn, run.id, knee, self.kernel_release
                )
                self._add(run_progress, run.id, array, sysfs, tick)
                progress[run.id] = run_progress
                forecast = run_progress.forecast()
            arrays.append(
                ArrayNow(
                    array,
                    sysfs,
                    forecast,
                    _members(tick, array.name),
                    run,
                    *tick.speed_limits(array.name),
                    tick.diagnoses.get(array.name),
                    failed=array.name in tick.failed(),
                )
            )
        self.progress = progress  # runs that ended are forgotten
        by_array = {a.name: a.forecast for a in arrays if a.forecast is not None}

        def forecast_of(array: Array) -> model.Forecast:
            return by_array.get(array.name) or model.Forecast(
                "insufficient", "no samples of this run yet"
            )

        job = jobs.build(
            self.conn,
            tick.parsed,
            tick.sysfs,
            tick.disk_kib,
            forecast_of,
            self.kernel_release,
            open_runs,
            self.snapshot.job,
            tick.ts,
        )
        self.diagnoses = dict(tick.diagnoses)
        evidence = self._evidence(arrays, job)
        available_kib = tick.mem_available_kib
        access = self._knob_access(tick.parsed)
        with self.writes:
            # What is tuned is the tuner's to change, under this lock: read before it, an apply
            # finishing meanwhile would be published over with the state from before it.
            job = replace(job, tuned=self.snapshot.job.tuned)
            open_session = journal.open_session(self.conn)
            knobs = knob_states(self.host, self.conn, open_session) if open_session else []
            judged = not self.written_since_publish
            if self.reverted_since_publish and open_session is None:
                # A revert came while this tick was built: its forecasts, made at the tuned pace
                # before the revert's event was stored, would undo the revert's read-back.
                reverted, job = self._after_revert(arrays, job)
                arrays = list(reverted)
            arrays = [self._judged(a, evidence.get(a.name), open_session, judged) for a in arrays]
            self.written_since_publish = self.reverted_since_publish = False
            self.boost_evidence = evidence
            self._publish(tick, arrays, job, open_session, knobs, available_kib, access)

    def after_tuning(self) -> None:
        """After the tuner's step of a tick, in the sampler's thread: when it wrote (boost put
        back for making the sync slower, with the effect it measured), what boost's estimate is
        made of changed with it; read it again now, not a tick later, so the page never offers
        the boost the box has just taken back."""
        if not self.written_since_publish:
            return
        evidence = self._evidence(self.snapshot.arrays, self.snapshot.job)
        with self.writes:
            session = journal.open_session(self.conn)
            snapshot = self.snapshot
            arrays = [
                replace(a, boost=self._boost(a, evidence.get(a.name), session))
                for a in snapshot.arrays
            ]
            self.boost_evidence = evidence
            self.snapshot = replace(snapshot, arrays=tuple(arrays))

    def _evidence(self, arrays: Sequence[ArrayNow], job: Job) -> dict[str, forecasts.BoostEvidence]:
        """What the journal holds of boost's gain, for each array whose run has a forecast."""
        return {
            a.name: forecasts.boost_evidence(
                self.conn,
                a.name,
                (p.name for p in job.phases if p.name != a.name),
                self.diagnoses.get(a.name),
            )
            for a in arrays
            if a.run is not None and a.forecast is not None
        }

    def _judged(
        self,
        state: ArrayNow,
        evidence: forecasts.BoostEvidence | None,
        session: Session | None,
        judged: bool,
    ) -> ArrayNow:
        """The array with boost's estimate and its verdicts' advice judged beside that estimate:
        the one verdict the page, the API and a push show. `judged` False: a write
        came after this tick read the kernel, so its verdicts were judged on the knobs before
        it: none until the next tick."""
        estimate = self._boost(state, evidence, session)
        found = state.diagnosis if judged else None
        offered = forecasts.offered_gain(estimate)
        boost_off = session is None or session.preset != forecasts.BOOST_PRESET
        verdicts = found.beside_boost(offered, boost_off) if found else None
        return replace(state, boost=estimate, diagnosis=verdicts)

    def _boost(
        self,
        state: ArrayNow,
        evidence: forecasts.BoostEvidence | None,
        session: Session | None,
    ) -> BoostEstimate | None:
        """Boost's estimate beside the array's forecast, for the session the journal holds now
        (a preset other than boost: scaled from the pace before it)."""
        if evidence is None or state.forecast is None:
            return None
        tuned_by = session.preset if session is not None else None
        untuned = (
            effects.untuned_speed(self.conn, session.id, state.name)
            if session is not None and tuned_by != forecasts.BOOST_PRESET
            else None
        )
        return self._estimate(state.forecast, evidence, tuned_by, untuned)

    def _estimate(
        self,
        fc: model.Forecast,
        evidence: forecasts.BoostEvidence,
        preset: str | None,
        untuned: float | None,
    ) -> BoostEstimate | None:
        return forecasts.boost_estimate(
            fc, evidence, preset, untuned, self.boost_max, self.kernel_release
        )

    def _publish(
        self,
        tick: Tick,
        arrays: list[ArrayNow],
        job: Job,
        open_session: Session | None,
        knobs: list[KnobNow],
        available_kib: int | None,
        knob_access: tuple[KnobAccess, ...],
    ) -> None:
        assert tick.parsed is not None and tick.ts is not None
        self.snapshot = Snapshot(
            arrays=tuple(arrays),
            ts=tick.ts,
            mdstat=tick.parsed,
            found_mdstat=tick.found_mdstat,
            speed_limit_min_kb_s=tick.global_limits[0],
            speed_limit_max_kb_s=tick.global_limits[1],
            last_success=tick.ts if tick.error is None else self.snapshot.last_success,
            preset=open_session.preset if open_session else None,
            session_started=open_session.started if open_session else None,
            session_id=open_session.id if open_session else None,
            knobs=tuple(knobs),
            job=job,
            available_kib=available_kib,
            knob_access=knob_access,
            kernel_release=self.kernel_release,
            disk_kib=dict(tick.disk_kib),
            disks=dict(tick.disks),
            disk_rotational=dict(tick.disk_rotational),
        )

    def after_write(
        self, open_session: Session | None, knobs: list[KnobNow], tuned: TuningState
    ) -> None:
        """An apply, a revert or an auto-tune step has just written (the applier holds
        `writes`): the session and its knobs as the write read them back, and what is tuned
        now, at once, so the page is right the second after the owner acts.
        A knob this write left alone keeps what the last tick read."""
        snapshot = self.snapshot
        same = open_session is not None and snapshot.session_id == open_session.id
        seen = {k.key: k.current for k in snapshot.knobs} if same else {}
        now = [k if k.current is not None else _read_before(k, seen.get(k.key)) for k in knobs]
        # The verdicts were judged on the knobs before this write: the next tick judges again.
        arrays = tuple(replace(a, diagnosis=None) for a in snapshot.arrays)
        job = replace(snapshot.job, tuned=tuned)
        self.written_since_publish = True
        if snapshot.session_id is not None and open_session is None:
            self.reverted_since_publish = True
            arrays, job = self._after_revert(arrays, job)
        elif open_session is not None and (
            open_session.preset == forecasts.BOOST_PRESET or not same
        ):
            # Boost is on, or a preset opened a session whose pace before it (what boost's gain
            # would scale) is not measured yet: no estimate until the next tick says otherwise.
            # A step within the same session leaves the forecast, and so the estimate, as is.
            arrays = tuple(replace(a, boost=None) for a in arrays)
        self.snapshot = replace(
            snapshot,
            arrays=arrays,
            job=job,
            preset=open_session.preset if open_session else None,
            session_started=open_session.started if open_session else None,
            session_id=open_session.id if open_session else None,
            knobs=tuple(now),
        )

    def tuned(self, state: TuningState) -> None:
        """What is tuned now, as the tuner found it after its tick or an action that wrote
        nothing (an auto-tune started, a sweep ended, a schedule's window changed hands)."""
        snapshot = self.snapshot
        if snapshot.job.tuned != state:
            self.snapshot = replace(snapshot, job=replace(snapshot.job, tuned=state))

    def _after_revert(
        self, arrays: Sequence[ArrayNow], job: Job
    ) -> tuple[tuple[ArrayNow, ...], Job]:
        """The arrays' forecasts at the pace before tuning, and the job's finish made of them."""
        reverted = tuple(self._reverted(state) for state in arrays)
        by_name = {a.name: a.forecast for a in reverted}
        return reverted, jobs.refreshed(job, by_name, self.kernel_release)

    def _reverted(self, state: ArrayNow) -> ArrayNow:
        """Right after a revert: the forecast at the pace before tuning, not the tuned pace the
        last tick measured, and boost's estimate over it again, from what the last tick read of
        boost's gain; the next tick's revert regime takes over from there."""
        progress = self.progress.get(state.run.id) if state.run else None
        untuned = progress.untuned if progress is not None else None
        # Once: a forecast already in the revert's regime is at the untuned pace.
        if state.forecast is not None and untuned is not None and state.forecast.regime != "revert":
            state = replace(state, forecast=model.reverted(state.forecast, untuned))
        evidence = self.boost_evidence.get(state.name)
        if state.forecast is None or evidence is None:
            return replace(state, boost=None)
        return replace(state, boost=self._estimate(state.forecast, evidence, None, None))

    def _knob_access(self, md: MdStat) -> tuple[KnobAccess, ...]:
        key = tuple((a.name, a.level) for a in md.arrays if ARRAY_NAME.fullmatch(a.name))
        if self._access_cache[0] != key or not self._access_cache[1]:
            found = tuple(knob_access(self.host, md))
            self._access_cache = (key, found)
        return self._access_cache[1]

    def _add(
        self,
        progress: model.RunProgress,
        run_id: int,
        array: Array,
        sysfs: ArraySysfs | None,
        tick: Tick,
    ) -> None:
        """This tick's sample, with the limits and the tuning event the sampler stored with it
        (forecasts.rebuild() reads the same from SQLite); add() skips a sample it already has."""
        sync = array.sync
        if sync is None or tick.ts is None:
            return
        since = progress.last.ts if progress.last is not None else 0.0
        stored = history.events_between(self.conn, run_id, since, tick.ts)
        event = model.sample_event(e.kind for e in stored)
        limits = tick.forecast_limits(array.name)
        progress.add(tick.ts, sync.done_blocks, sync.total_blocks, limits, event)


def _read_before(k: KnobNow, current: str | None) -> KnobNow:
    """A knob this write left alone: as the last tick read it."""
    return replace(k, current=current, drift=current is not None and current != k.desired)


def _members(tick: Tick, array: str) -> tuple[MemberIO, ...]:
    """Each member's busy share and wait over the diagnosis window (running arrays only)."""
    diagnosis = tick.diagnoses.get(array)
    if diagnosis is None:
        return ()
    return tuple(
        MemberIO(m.member, m.busy, m.wait_ms / 1000)
        for m in diagnosis.readings.members
        if m.wait_ms is not None
    )
