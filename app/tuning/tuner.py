"""Tuner: the one object routes and the lifespan hold; it plans presets and delegates the rest."""

import logging
from collections.abc import Callable
from pathlib import Path

from app.config import Settings
from app.kernel.host import Host
from app.live import array_view
from app.live.forecasts import BOOST_PRESET
from app.live.snapshot import Snapshot
from app.live.snapshot_builder import SnapshotBuilder
from app.live.tick import Tick
from app.shapes.tuning import Session, Sweep, TuningDone, TuningState
from app.store import db, journal
from app.tuning.autotune.runner import AutoTuner
from app.tuning.errors import TuningError
from app.tuning.planning import presets
from app.tuning.planning.knob_plan import KnobPlan, plan_preset
from app.tuning.planning.presets import Preset, PresetError, UnknownPreset
from app.tuning.planning.targets import PlanError
from app.tuning.schedule.daily import local_zone
from app.tuning.schedule.scheduler import Scheduler
from app.tuning.session.apply import Applier, JournalUnavailable
from app.tuning.session.policy import Policy
from app.tuning.session.reconcile import Recovery, boot_of_last_write, reconcile, recover
from app.tuning.state import tuning_state

log = logging.getLogger(__name__)

# A NAS restarted between two phases of an expansion shows nothing syncing at start-up: DSM
# begins the next array once its storage service is up. The boost the owner left on waits this
# long for that phase, and is forgotten if none of the same job starts.
NEXT_PHASE_WAIT_S = 1800.0
SCRUBS = ("check", "repair")


class Tuner:
    """The loaded presets, the applier (writes and locks) and the policy (automatic reverts)."""

    def __init__(
        self,
        host: Host,
        conn: db.Connection,
        clock: Callable[[], float],
        settings: Settings,
        found: dict[str, Preset],
        preset_errors: list[PresetError],
    ) -> None:
        self.host = host
        self.conn = conn
        self.clock = clock
        self.settings = settings
        self.presets = found
        self.preset_errors = preset_errors
        self.applier = Applier(host, conn, clock, settings)
        self.policy = Policy(self.applier)
        self.scheduler = Scheduler(self.applier, self.plan, *local_zone(settings.tz))
        self.autotuner = AutoTuner(self.applier, settings)
        self.latest: Tick | None = None  # the sampler's last tick: what auto-tune starts from
        self.recovery: Recovery | None = None  # a session start-up found outside the database
        # The session start-up opened again after the NAS restarted, and what the page says.
        self.reapplied: tuple[int, str] | None = None
        # The boost left on at a restart between two phases, until when it waits for the next.
        self.owed_after_restart: tuple[Session, float] | None = None
        self.stopping = False  # mdboost is stopping: no tick may apply anything any more
        self.operation = self.applier.operation
        self.lock = self.applier.lock
        self.present: SnapshotBuilder | None = None  # where what is tuned is published (attach)

    @classmethod
    def open(cls, host: Host, clock: Callable[[], float], settings: Settings) -> "Tuner":
        """A tuner with its own database connection and the presets from disk."""
        found, errors = presets.load_all(settings.presets_dir, settings.data_dir)
        return cls(host, db.connect(settings.db), clock, settings, found, errors)

    def attach(self, present: SnapshotBuilder) -> None:
        """Publish into the present: each write's read-back with the state it leaves, and the
        state after each tick and action, so every view reads what is tuned from the Job."""
        self.present = present
        self.applier.on_write = lambda session, knobs: present.after_write(
            session, knobs, self.tuned_now(session.preset if session else None)
        )

    def tuned_now(self, preset: str | None) -> TuningState:
        """What is tuned with `preset`'s session open (None: none is); the caller holds the lock
        (the sweep and the schedules are read on the tuner's connection, when they matter)."""
        return tuning_state(
            preset,
            self.autotuner.running is not None,
            lambda: self.autotuner.view(self.conn),
            lambda: self.scheduler.view(self.conn, self.clock()),
        )

    def publish_tuned(self) -> None:
        """The state after a change that may have written nothing (a sweep started or ended, a
        schedule added or removed); the caller holds the lock. The session is the present's:
        every write published it already."""
        if self.present is None:
            return
        shown = self.present.snapshot
        # A revert done in the kernel whose record waits for room: the journal still holds the
        # session, the kernel its originals; nothing is tuned.
        unrecorded = shown.session_id is not None and self.applier.awaiting_record(shown.session_id)
        self.present.tuned(self.tuned_now(None if unrecorded else shown.preset))

    def preset(self, name: str) -> Preset:
        preset = self.presets.get(name)
        if preset is None:
            raise UnknownPreset(f"no preset named {name[:40]!r} (known: {', '.join(self.presets)})")
        return preset

    @property
    def boost_max_kb_s(self) -> float | None:
        """The max limit the boost preset writes (KiB/s), when it names one: boost's estimate of
        a run held by its max limit goes up to it."""
        preset = self.presets.get("boost")
        settings = preset.settings if preset is not None else ()
        value = next((s.value for s in settings if s.knob == "sync_speed_max"), None)
        return float(value) if value is not None and value.isdigit() else None

    def plan(self, name: str, array_names: list[str] | None = None) -> KnobPlan:
        preset = self.preset(name)
        if preset.restore_originals:
            raise PlanError(f"{name} puts back the originals: use revert")
        return plan_preset(
            preset,
            self.host,
            array_view.current(self.host),
            array_names,
            self.settings.max_cache_mb,
        )

    def apply(self, name: str, array_names: list[str] | None = None) -> TuningDone:
        """A person's apply: it wins over a schedule's window until that window ends."""
        if self.preset(name).restore_originals:
            return self.revert(f"{name} preset")
        with self.applier.exclusive(wait=False):
            result = self.applier.apply(name, self.plan(name, array_names))
            self.policy.stop_measuring(f"{name} was applied by hand")
            if result.op_id is not None:
                self.policy.pressed.add(result.op_id)
            self.autotuner.cancel(f"{name} was applied by hand during the sweep")
            self.scheduler.note_manual()
            self.publish_tuned()
            return result

    def revert(self, reason: str = "requested", wait: bool = False) -> TuningDone:
        """A person's revert: it wins over a schedule's window until that window ends."""
        with self.applier.exclusive(wait):
            self.policy.stop_measuring(f"reverted by hand ({reason})")
            self.autotuner.cancel(f"reverted by hand during the sweep ({reason})")
            try:
                result = self.applier.revert_locked(reason)
                self.scheduler.note_manual()
                return result
            finally:
                # Also when the revert's record could not be written: the kernel holds the
                # originals then, and the page must not say the boost is still on.
                self.publish_tuned()

    def autotune(self, array_name: str | None = None) -> Sweep:
        """A person starts a sweep on the running sync (from the sampler's last tick)."""
        with self.applier.exclusive(wait=False):
            try:
                result = self.autotuner.start(self.latest, array_name)
                self.policy.stop_measuring("auto-tune was started by hand")
                self.scheduler.note_manual()
                self.publish_tuned()
            except db.Error as error:  # its record cannot be written: a full disk, most likely
                raise JournalUnavailable(
                    f"auto-tune did not start: the tuning journal cannot be written ({error})"
                ) from None
            return result

    def reconcile(self, moved_aside: Path | None = None) -> str | None:
        """At start-up: a session the database lost (`moved_aside`: the damaged file this start
        moved), the open session as the journal says, then a sweep a crash cut short."""
        written_in = boot_of_last_write(self.applier)  # before recover() rewrites the file
        self.recovery = recover(self.applier, moved_aside)
        done = reconcile(self.applier, self.policy, written_in)
        with self.applier.exclusive(wait=True):
            left = journal.last_session(self.conn)
            if done == "reapply" and left is not None:
                done = self._apply_again(left)
            self.autotuner.recover()
        return done

    def _apply_again(self, left: Session) -> str:
        """The NAS restarted while a preset the owner left on was for a job that still runs:
        apply it again to the arrays still syncing, in a new session whose originals are the
        kernel's fresh values (what a revert then puts back). Auto-tune's and other sessions
        not made of one preset are not: they were closed, and the page says Not tuned."""
        preset = self.presets.get(left.preset)
        if preset is None or preset.restore_originals:
            return "forgotten"
        syncing = [a.name for a in array_view.current(self.host).arrays if a.syncing]
        arrays = [a for a in left.arrays if a in syncing]
        if not arrays and left.preset == BOOST_PRESET:
            # Between two phases, or a finished job: the first ticks' job tells which.
            self.owed_after_restart = (left, self.clock() + NEXT_PHASE_WAIT_S)
            log.warning("boost waits for its job's next phase after the NAS restarted")
            return "waiting"
        if not arrays:  # a finished job is not tuned again
            return "forgotten"
        try:
            self.applier.apply(left.preset, self.plan(left.preset, arrays))
        except (PlanError, TuningError) as error:
            log.error("%s was not applied again after the NAS restarted: %s", left.preset, error)
            return "forgotten"
        self._note_reapplied(left.preset)
        log.warning("%s applied again to %s after the NAS restarted", left.preset, arrays)
        return "reapplied"

    def _note_reapplied(self, preset: str) -> None:
        session = journal.open_session(self.conn)
        if session is not None:
            self.reapplied = (session.id, f"{preset} re-applied after the NAS restarted")

    def restarted_note(self, session: Session | None) -> str | None:
        """'boost re-applied after the NAS restarted' while that session is open."""
        found = self.reapplied
        return found[1] if found and session is not None and session.id == found[0] else None

    def on_tick(self, tick: Tick | None = None, snapshot: Snapshot | None = None) -> None:
        """After each sample: automatic reverts, the schedules, the auto-tune sweep, from the
        `tick` and the present built from it (`snapshot`)."""
        if self.stopping:
            return
        if tick is not None and snapshot is not None:
            self._boost_after_restart(tick, snapshot)
            self._boost_follows_the_job(tick, snapshot)
        self.policy.on_tick(tick, snapshot)
        if tick is None:
            return
        self.latest = tick
        if self.operation.locked() or not self.lock.acquire(blocking=False):
            return  # an apply or revert runs: the next tick does it
        try:
            self._measured_without(tick)
            self.scheduler.on_tick(tick.any_running, tick.clock_step != 0)
            self.autotuner.on_tick(tick)
            self.publish_tuned()
        finally:
            self.lock.release()

    def _measured_without(self, tick: Tick) -> None:
        """The window a preset was put back for is over: apply it again to the arrays still
        syncing (the caller holds the lock). That apply has a pace before it now, and the policy
        judges it as any other. The sync ending or failing meanwhile cancels it, and so does a
        session other than the one put back (a schedule's window)."""
        owed = self.policy.measuring
        if owed is None or tick.parsed is None or tick.ts is None:
            return
        md, failed = tick.parsed, tick.failed()
        syncing = [a for a in owed.arrays if (x := md.array(a)) is not None and x.syncing]
        session = journal.open_session(self.conn)
        if any(a in failed for a in owed.arrays):
            self.policy.stop_measuring(f"{' and '.join(failed)} failed")
        elif not syncing:
            self.policy.stop_measuring("the sync ended")
        elif session is not None and session.id != owed.session_id:
            self.policy.stop_measuring(f"{session.preset} was applied meanwhile")
        elif session is None and tick.ts >= owed.back_at:
            # Once, whatever comes of it; forgotten after the apply, not before: a page read
            # between the two would find neither the window nor boost, and draw "off".
            try:
                self.applier.apply(owed.preset, self.plan(owed.preset, syncing))
            except (PlanError, TuningError) as error:
                log.error("%s was not applied again after measuring: %s", owed.preset, error)
                return
            finally:
                self.policy.measuring = None
            log.info(
                "%s applied again to %s after measuring the pace without it", owed.preset, syncing
            )

    def _boost_after_restart(self, tick: Tick, snapshot: Snapshot) -> None:
        """The boost left on at a restart between two phases goes on again as the same job's
        next phase runs: one of the arrays it held is a phase of the job md runs now. A session
        opened meanwhile (the owner's, a schedule's) or the wait running out forgets it."""
        owed = self.owed_after_restart
        if owed is None:
            return
        left, until = owed
        running = snapshot.job.running
        if self.clock() > until or journal.open_session(self.conn) is not None:
            self.owed_after_restart = None
            log.info("boost left on before the NAS restarted is forgotten: no phase of its job")
            return
        ours = any(p.name in left.arrays for p in snapshot.job.phases)
        if running is None or not ours or tick.parsed is None:
            return
        found = tick.parsed.array(running.name)
        if found is None or found.sync is None or found.sync.action in SCRUBS:
            return  # a scrub is the owner's next job, not this one's phase
        if self._boost_onto(tick, running.name, "after the NAS restarted"):
            self.owed_after_restart = None
            self._note_reapplied(BOOST_PRESET)

    def _boost_follows_the_job(self, tick: Tick, snapshot: Snapshot) -> None:
        """Boost is for the owner's whole job: pressed during md2 of an SHR expansion, it is
        applied to md3 as md3's phase starts (in the same session: md3's originals are what the
        kernel holds then), so the policy's "operations finished" revert waits for the job."""
        running = snapshot.job.running
        if snapshot.preset != BOOST_PRESET or running is None:
            return  # as the tick, or a write since, left the journal: no boost to follow
        session = journal.open_session(self.applier.conn)  # which arrays it holds, and still on
        if session is None or session.preset != BOOST_PRESET:
            return
        if running.name not in session.arrays:
            self._boost_onto(tick, running.name, "following the job")

    def _boost_onto(self, tick: Tick, array: str, why: str) -> bool:
        """Apply boost to `array` from this tick's readings; False when it did not happen (an
        apply or revert runs, the plan or a write failed: the next tick tries again)."""
        if tick.parsed is None:
            return False
        if self.operation.locked() or not self.lock.acquire(blocking=False):
            return False
        try:
            plan = plan_preset(
                self.preset(BOOST_PRESET),
                self.host,
                tick.parsed,
                [array],
                self.settings.max_cache_mb,
            )
            self.applier.apply(BOOST_PRESET, plan)
            log.info("boost on %s, %s", array, why)
            return True
        except (PlanError, TuningError) as error:
            log.warning("boost could not go on %s, %s: %s", array, why, error)
            return False
        finally:
            self.lock.release()

    def shutdown(self) -> None:
        """Revert as mdboost stops. A tick under way may still apply (a schedule's window): the
        revert waits for its lock and puts that back too; later ticks apply nothing."""
        self.stopping = True
        self.policy.shutdown()
