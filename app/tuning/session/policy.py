"""Sessions that end by themselves (time up, arrays finished, mdboost stopping), and the tick.

The sampler calls on_tick() after every sample: it reverts a session that is due or that made a
sync slower than before it (never_slower.py), puts a preset back for a window to measure the
pace without it when no pace before it was known, notes drift (someone else changed a knob mdboost
set) once per value, and stores finished before/after effects.
"""

import logging
from dataclasses import dataclass, replace

from app.live import array_view
from app.live.forecasts import BOOST_PRESET
from app.live.knobs import knob_states
from app.live.snapshot import Job, Snapshot
from app.live.tick import Tick
from app.shapes.tuning import Session
from app.store import db, effects, history, journal, slower
from app.tuning.session.apply import Applier, Busy, JournalUnavailable, TuningFailed
from app.tuning.session.never_slower import NeverSlower

log = logging.getLogger(__name__)

OPERATIONS_FINISHED = "the tuned arrays' operations finished"


def waits_for_the_job(session: Session, why: str | None) -> bool:
    """A boost whose arrays are done while, at start-up, no job can be known yet: the NAS may
    have restarted between two phases of an expansion, before DSM began the next array."""
    return session.preset == BOOST_PRESET and why == OPERATIONS_FINISHED


# The end of a session that mdboost put back as it stopped: the owner had left it on.
STOPPED = "mdboost stopped (MDBOOST_REVERT_ON_EXIT)"


@dataclass(frozen=True)
class Measuring:
    """A preset put back for one window to measure the sync's pace without it, owed again at
    `back_at` (the tuner applies it then, and that apply is judged against this window)."""

    session_id: int  # the session put back
    preset: str
    arrays: tuple[str, ...]
    started: float  # unix seconds
    back_at: float
    reason: str


class Policy:
    """Automatic reverts and the per-tick checks, on top of the applier's locks."""

    def __init__(self, applier: Applier) -> None:
        self.applier = applier
        self.drift_seen: set[tuple[int, str, str]] = set()
        self.never_slower = NeverSlower(applier.settings.effect_minutes * 60)
        self.kernel_release: str | None = None
        self.found_slower: dict[int, str] = {}  # session id -> why it is being put back
        # The re-apply owed after a window without the preset. In memory only: a restart
        # during that window forgets it and leaves the originals on, as an owner's Off would.
        self.measuring: Measuring | None = None
        # The applies the owner pressed (their op ids): only these are measured without, once
        # each; the re-apply after, a schedule's window or boost following the job onto the
        # next array are not (a preset the scheduler holds is its to put back).
        self.pressed: set[int] = set()

    def stop_measuring(self, why: str) -> None:
        """The owed re-apply is cancelled (the owner changed tuning, the sync ended or failed)."""
        if self.measuring is not None:
            log.info("%s is not applied again: %s", self.measuring.preset, why)
        self.measuring = None

    def revert_reason(
        self,
        open_session: Session,
        at_start: bool = False,
        tick: Tick | None = None,
        job: Job | None = None,
        rebooted: bool = False,
    ) -> str | None:
        """Why the open session should be reverted now, or None to keep it: from the `tick`'s
        readings and the owner's `job` built from them, or (at start-up, before the first tick)
        from the kernel. `rebooted`: the NAS restarted since the session's last write, so that
        no knob holds mdboost's values, and none is expected to."""
        applier = self.applier
        if at_start and journal.unfinished_ops(applier.conn):
            return "mdboost stopped in the middle of an apply or revert"
        if at_start and not rebooted and _nothing_left_to_resume(applier, open_session):
            return "no knob holds what mdboost set (a revert the journal could not record?)"
        hours = applier.settings.boost_hours
        if hours is not None and applier.clock() - open_session.started >= hours * 3600:
            return f"MDBOOST_BOOST_HOURS={hours:g} elapsed"
        if tick is not None and tick.parsed is not None:
            md, failed_now = tick.parsed, tick.failed()
        else:
            md = array_view.current(applier.host)
            failed_now = tuple(array_view.failed_names(md, applier.host))
        tuned = open_session.arrays
        # Whatever the settings: never keep a boost on an array md has given up on.
        if failed := [a for a in failed_now if a in tuned]:
            return f"{' and '.join(failed)} failed"
        if applier.settings.revert_on_finish:
            still = [a for a in tuned if (x := md.array(a)) is not None and x.syncing]
            # Boost is for the owner's whole job: it holds between two phases of an expansion
            # (the next array begins a few ticks after the last ends) and follows the job.
            goes_on = job is not None and job.goes_on_for(tuned)
            if tuned and not still and not (open_session.preset == BOOST_PRESET and goes_on):
                return OPERATIONS_FINISHED
        return None

    def on_tick(self, tick: Tick | None = None, snapshot: Snapshot | None = None) -> None:
        """Sampler hook: auto-revert when due, store finished effects, note drift, from the
        `tick`'s readings and the present (`snapshot`) built from them.

        Skipped while an apply or revert holds the lock: the next tick does it.
        """
        applier = self.applier
        if tick is not None:
            self.never_slower.observe(tick)
            if tick.clock_step and self.measuring is not None:  # the wall clock stepped
                back_at = self.measuring.back_at + tick.clock_step
                self.measuring = replace(self.measuring, back_at=back_at)
        if applier.operation.locked() or not applier.lock.acquire(blocking=False):
            return
        try:
            applier.record_unrecorded()
            open_session = journal.open_session(applier.conn)
            if open_session is not None and applier.awaiting_record(open_session.id):
                return
            job = snapshot.job if snapshot is not None else None
            why = (
                self.revert_reason(open_session, tick=tick, job=job)
                if open_session is not None
                else None
            )
            if open_session is not None and why is None and tick is not None:
                why = self._slower_than_before(open_session, tick)
            if open_session is not None and why is not None:
                try:
                    applier.revert_locked(why)
                except TuningFailed as error:
                    log.warning("automatic revert failed, will retry: %s", error.message)
                except JournalUnavailable as error:
                    log.warning("automatic revert: %s", error)
            elif open_session is not None:
                self._note_drift(open_session, snapshot)
            effects.settle(applier.conn, applier.settings.effect_minutes * 60, applier.clock())
        finally:
            applier.lock.release()

    def _slower_than_before(self, open_session: Session, tick: Tick) -> str | None:
        """The revert's reason when the session's latest apply, settled, made a sync slower
        than the pace before it in like conditions; each finding is remembered for this box."""
        conn, now = self.applier.conn, tick.ts
        if open_session.id in self.found_slower:  # a revert that failed: try again
            return self.found_slower[open_session.id]
        if now is None:
            return None
        applied = slower.latest_apply(conn, open_session.id)
        found = []
        unknown = []
        for part in applied:
            if not self.never_slower.due(part, now) or slower.judged(conn, part.op_id, part.array):
                continue
            if part.op_id in self.pressed and self.never_slower.before_unknown(part):
                unknown.append(part.array)
            judged = self.never_slower.judge(part)
            if judged is None:
                log.info("%s on %s: pace not known well enough to judge", part.preset, part.array)
                continue
            if not judged[0].slower:
                kept = judged[0]
                log.info(
                    "%s on %s: not slower (%.0f -> %.0f KiB/s, noise +-%.0f)",
                    part.preset,
                    part.array,
                    kept.before_kb_s,
                    kept.after_kb_s,
                    kept.noise_kb_s,
                )
                continue
            comparison, last = judged
            trace = self.never_slower.traces.get(part.array)
            knobs = [k.key for k in journal.session_knobs(conn, open_session.id)]
            finding = slower.SlowerPreset(
                found_at=now,
                op_id=part.op_id,
                array=part.array,
                run_id=part.run_id,
                action=trace.action if trace is not None else "",
                preset=part.preset,
                kernel_release=self._kernel_release(),
                before_kb_s=comparison.before_kb_s,
                after_kb_s=comparison.after_kb_s,
                noise_kb_s=comparison.noise_kb_s,
                other_io=comparison.other_io,
                md_thread=last.md_thread[0] if last.md_thread else None,
                md_thread_cores=round(last.md_thread[1], 2) if last.md_thread else None,
                knobs=tuple(knobs),
            )
            try:
                slower.record(conn, finding, slower_sentence(finding))
            except db.Error as error:  # the kernel comes first: put it back all the same
                log.warning("cannot remember that %s was slower: %s", part.preset, error)
            found.append(finding)
        if not found:
            return self._measure_without(open_session, unknown, now)
        for finding in found:
            log.warning("%s", slower_sentence(finding))
        reason = "; ".join(slower_sentence(f) for f in found)
        self.found_slower[open_session.id] = reason
        return reason

    def _measure_without(self, open_session: Session, unknown: list[str], now: float) -> str | None:
        """The revert's reason when the session's apply is judged but no pace before it was
        known (the owner pressed as the sync began): the originals go back for a settle and an
        effect window, then the tuner applies the preset again, and that apply is judged against
        this window. Once per press: a re-apply whose pace before is again unknown stays."""
        if not unknown:
            return None
        preset = open_session.preset
        duration = effects.SETTLE_S + self.never_slower.window_s
        names = " and ".join(unknown)
        reason = (
            f"measuring {names}'s pace without {preset} for {round(duration / 60, 1):g} minutes:"
            " no pace before the press was known"
        )
        self.measuring = Measuring(
            open_session.id, preset, tuple(open_session.arrays), now, now + duration, reason
        )
        self.found_slower[open_session.id] = reason  # a revert that fails is tried again
        log.warning("%s", reason)
        return reason

    def _kernel_release(self) -> str | None:
        """uname -r, read once (it cannot change while the system runs)."""
        if self.kernel_release is None:
            self.kernel_release = self.applier.host.read_kernel_release() or ""
        return self.kernel_release or None

    def _note_drift(self, open_session: Session, snapshot: Snapshot | None) -> None:
        """Log and record a knob someone else changed, once per value: from the knobs the
        present read this tick (the kernel is read here only without one)."""
        conn = self.applier.conn
        if snapshot is not None and snapshot.session_id == open_session.id:
            states = list(snapshot.knobs)
        else:
            states = knob_states(self.applier.host, conn, open_session)
        for knob in states:
            mark = (open_session.id, knob.key, str(knob.current))
            if knob.drift and mark not in self.drift_seen:
                self.drift_seen.add(mark)
                log.warning("drift: %s is %s, mdboost set %s", knob.key, knob.current, knob.desired)
                tuned = open_session.arrays
                array = knob.target if knob.target in tuned else None
                run = history.open_run(conn, array) if array else None
                with db.write_transaction(conn):
                    history.add_event(
                        conn,
                        self.applier.clock(),
                        array,
                        run.id if run else None,
                        "drift",
                        {"key": knob.key, "desired": knob.desired, "current": knob.current},
                    )

    def shutdown(self) -> None:
        """MDBOOST_REVERT_ON_EXIT: put the originals back when mdboost stops."""
        applier = self.applier
        if applier.settings.revert_on_exit and journal.open_session(applier.conn) is not None:
            try:
                applier.revert(STOPPED, wait=True)
            except (Busy, TuningFailed, JournalUnavailable) as error:
                log.error("could not revert at exit: %s", error)
            except Exception:  # the shutdown must still close the database and exit
                log.exception("could not revert at exit")


def _nothing_left_to_resume(applier: Applier, open_session: Session) -> bool:
    """Every knob of the session reads something other than what mdboost set: e.g. the kernel
    was put back at SIGTERM while the disk was full, so the journal still calls it open."""
    knobs = knob_states(applier.host, applier.conn, open_session)
    return bool(knobs) and all(k.current is not None and k.drift for k in knobs)


def slower_sentence(found: slower.SlowerPreset) -> str:
    """'boost made md2's reshape slower: 30.1 → 24.0 MB/s (×0.80, beyond its ±1.2 MB/s
    noise); mdboost put the original values back' (MB = 10^6 bytes)."""

    def mb_s(kb_s: float) -> str:
        return f"{kb_s * 1.024 / 1000:.1f}"

    busy = (
        f", {found.md_thread} at {found.md_thread_cores:.0%} of a CPU core"
        if found.md_thread and found.md_thread_cores is not None
        else ""
    )
    return (
        f"{found.preset} made {found.array}'s {found.action or 'sync'} slower: "
        f"{mb_s(found.before_kb_s)} → {mb_s(found.after_kb_s)} MB/s (×{found.ratio:.2f}, beyond "
        f"its ±{mb_s(found.noise_kb_s)} MB/s noise{busy}); mdboost put the original values back"
    )
