"""Auto-tune: find this box's best stripe cache and read-ahead by measuring them on the
sync that runs now.

POST /api/autotune plans a sweep (plan.py: it reads the knobs' values found) and holds its
first setting. Each sampler tick then hands the array's progress, MemAvailable and diskstats to
the step being measured (the tick's readings: the sweep reads the kernel only to read back what it
writes), and a step that has measured enough gives way to the next (sweep.py: the stripe cache
climbs and never steps down, since Linux 4.1 its value is a floor; read-ahead returns to a
reference). The smallest setting within 5 % of the best is kept. Every write is a journaled apply
(writes.py); the sweep's row keeps the values found when it began, so an abort (RAM under
the floor, the box's own I/O starving, a write refused, the sync ending) and a restart after a
crash mid-sweep put exactly those back.
"""

import logging
import math

from app.config import Settings
from app.forecast import physics
from app.live.tick import Tick
from app.shapes.tuning import Sweep
from app.store import autotune as stored
from app.store import db, history, journal
from app.tuning.autotune import record, scope, sweep, writes
from app.tuning.autotune.guard import OwnOps, low_memory, other_io_seen, someone_else, unread
from app.tuning.autotune.record import setting_label
from app.tuning.autotune.scope import AutoTuneRefused
from app.tuning.autotune.state import Running
from app.tuning.session.apply import Applier, JournalUnavailable, TuningFailed

log = logging.getLogger(__name__)

KNEE_PASSED = "not counted: the grow passed its knee during this step"


def read_now(tick: Tick, array: str) -> float | None:
    """KiB/s the array's users read from it over the tick's diagnosis window; None unknown."""
    diagnosis = tick.diagnoses.get(array)
    return diagnosis.observation.array_read_kib_s if diagnosis is not None else None


class AutoTuner:
    """Runs at most one sweep; the caller holds the applier's lock for every method but view."""

    def __init__(self, applier: Applier, settings: Settings) -> None:
        self.applier = applier
        self.settings = settings
        self.running: Running | None = None

    # ---- start
    def start(self, tick: Tick | None, requested: str | None) -> Sweep:
        if self.running is not None:
            raise AutoTuneRefused(f"a sweep on {self.running.array} is running already")
        host, conn = self.applier.host, self.applier.conn
        array, raid_disks = scope.pick_array(tick, requested, host)
        assert tick is not None and tick.parsed is not None and tick.ts is not None
        assert array.sync is not None
        scope.refuse_through_a_limit(array, scope.limits(tick, array.name))
        available_mib = scope.available_mib(tick, self.settings)
        start_values, phases = scope.phases(host, self.settings, array, tick.parsed, available_mib)
        if not phases:
            raise AutoTuneRefused(f"nothing to try on {array.name}: no knob with a candidate")
        run_id = history.open_run_id(conn, array.name)
        sweep_id = record.open_sweep(conn, array.name, run_id, tick.ts, start_values, phases)
        knee = physics.grow_knee(array.level, raid_disks)
        done, total = array.sync.done_blocks, array.sync.total_blocks
        left_s = sweep.time_left_s(done, total, array.sync.speed_kb_s, knee)
        steps = self._planned_steps(phases, read_now(tick, array.name))
        times = sweep.fit_steps(self._configured(), steps, left_s, self._tick_s())
        self.running = Running(
            id=sweep_id,
            array=array.name,
            action=array.sync.action,
            start_values=start_values,
            phases=phases,
            knee=knee,
            ops=OwnOps(journal.newest_op_id(conn), set()),
            before_knee=knee is not None and done is not None and done < knee * (total or 0),
            times=times,
            began=(tick.ts, done) if done is not None else None,
            steps_planned=steps,
            fitted_at_start=times,
            md_left_s=left_s,
        )
        if left_s is not None and times != self._configured():
            to = "its knee" if self.running.before_knee else "its end"
            self.running.start_said = (
                f"steps shortened to {times.said()}: the {array.sync.action} was about "
                f"{left_s:.0f} s from {to}"
            )
            self.running.say_fit(self.running.start_said)
        log.info("auto-tune on %s: %s, steps %s", array.name, [p.to_json() for p in phases], times)
        self._begin_phase(self.applier.clock())  # holds the value found: writes nothing yet
        started = self.view(conn)
        assert started is not None
        return started

    def _planned_steps(self, phases: list[sweep.Phase], read_kib_s: float | None) -> int:
        """The steps the sweep will measure, as far as known at its start. A read-ahead phase is
        not counted when nothing reads the array now: it will most likely be skipped
        (_nothing_to_read_ahead), and counting it would shorten the ladder's steps."""
        skipped = unread(read_kib_s)
        return sum(
            len(phase.steps())
            for phase in phases
            if not (skipped and phase.knob == "read_ahead_kb" and phase is not phases[0])
        )

    def _configured(self) -> sweep.StepTimes:
        s = self.settings
        return sweep.StepTimes(
            s.autotune_settle_seconds, s.autotune_measure_seconds, s.autotune_max_measure_seconds
        )

    def _tick_s(self) -> float:
        return self.settings.sample_seconds or self.settings.busy_sample_seconds

    def _refit(self, now: float, done: int, total: int | None) -> None:
        """Fit the steps again on the pace the sweep itself has measured, once it has measured
        as long as a step must (md's `speed=` at the start can be far off early in a grow). The
        step being measured takes the new lengths too, its settle only ever shortened.

        Only ever shorter than md's `speed=` made them: the pace a sweep measures is that of the
        settings it tries, the slow value found among them, so it says more time is left than
        the kept setting will need (on the real 6.1 and 6.12 grows it said 166-182 s where md
        said 97-103 s, and steps lengthened on it ran the sweep to 34-38 % of the grow)."""
        r = self.running
        assert r is not None and r.window is not None
        if r.began is None:
            r.began = (now, done)
            return
        tick_s = self._tick_s()
        knee = r.knee if r.before_knee else None
        left_s = sweep.paced_left_s(
            r.began, (now, done), total, knee, (sweep.MIN_POINTS + 1) * tick_s
        )
        if left_s is None:
            return
        if r.md_left_s is not None:
            left_s = min(left_s, r.md_left_s)
        times = sweep.fit_steps(self._configured(), r.steps_planned, left_s, tick_s)
        if times == r.times:
            return
        window = r.window
        window.settle_s = min(window.settle_s, times.settle_s)
        window.min_s, window.max_s = times.min_s, times.max_s
        r.times = times
        if times.said() == r.fitted_at_start.said():  # md's speed= was about right
            r.say_fit(r.start_said)
            return
        to = "its knee" if knee is not None else "its end"
        md_said = f" (md's speed= had said {r.md_left_s:.0f} s)" if r.md_left_s else ""
        said = (
            f"steps fitted to {times.said()}: at the pace measured over the sweep's first "
            f"{now - r.began[0]:.0f} s, the {r.action} was about {left_s:.0f} s from {to} when "
            f"the sweep began{md_said}"
        )
        r.say_fit(said)
        log.debug("auto-tune on %s: %s", r.array, said)

    # ---- each tick
    def on_tick(self, tick: Tick) -> None:
        r = self.running
        if r is not None and tick.clock_step:
            r.shift(tick.clock_step)
        if r is None or tick.ts is None or tick.parsed is None:
            return  # nothing running, or a tick that could not read mdstat: wait for the next
        why = someone_else(self.applier.conn, r.ops)
        if why is not None:
            self._finish("cancelled", why)
            return
        array = tick.parsed.array(r.array)
        sync = array.sync if array is not None else None
        if sync is None or not sync.running or sync.action != r.action or sync.done_blocks is None:
            self._abort(f"{r.array}'s {r.action} ended before the sweep did")
            return
        why = low_memory(tick, self.settings) or r.io.starving(
            tick, r.array, tick.ts, self.settings.autotune_starve_ms
        )
        if why is not None:
            self._abort(why)
            return
        r.reads.add(tick, r.array)
        window = r.window
        assert window is not None
        try:
            if r.passed_the_knee(sync.done_blocks, sync.total_blocks):
                self._knee_passed(tick.ts)
                return
            window.add(tick.ts, sync.done_blocks)
            self._refit(tick.ts, sync.done_blocks, sync.total_blocks)
            if window.complete():
                self._next_step(tick, window)
        except TuningFailed as failure:
            self._abort(f"the kernel refused a setting: {failure.message}")
        except JournalUnavailable as error:
            self._abort(str(error))
        except db.Error as error:  # a full disk: the kernel goes back first, as in revert
            self._abort(f"the tuning journal cannot be written ({error})")

    def _knee_passed(self, now: float) -> None:
        """The grow passed its knee: from here it only writes, so what was measured before says
        nothing about the rest. A ladder measures again from the value it holds (it cannot step
        back down); read-ahead, which serves reads, keeps the value found."""
        r = self.running
        assert r is not None
        phase = r.phases[r.phase]
        self._store_step(r, None, KNEE_PASSED)
        self._forget("measured before the grow's knee")
        if phase.climbs:
            log.info("auto-tune on %s: the grow passed its knee; climbing on", r.array)
            r.queue = [v for v in phase.candidates if v > r.value]
            self._hold(r.value, "start", now)
            return
        r.remarks.append(f"{phase.knob} kept as found: the grow passed its knee (it only writes)")
        r.chosen[phase.knob] = phase.reference
        self._next_phase(now)

    # ---- steps
    def _begin_phase(self, now: float) -> None:
        r = self.running
        assert r is not None
        phase = r.phases[r.phase]
        r.queue = list(phase.candidates)
        r.forget_counted()
        self._hold(phase.reference, "start" if phase.climbs else "reference", now)

    def _hold(self, value: int, role: str, now: float) -> None:
        """Write this step's setting (with every earlier phase's choice) and start measuring."""
        r = self.running
        assert r is not None
        phase = r.phases[r.phase]
        r.value, r.role = value, role
        label = setting_label(phase.knob, value) + (" (reference)" if role == "reference" else "")
        changed = self._write({**r.chosen, phase.knob: value}, f"auto-tune: {label}")
        settle = r.times.settle_s if changed else 0.0
        r.window = sweep.Window(now, settle, r.times.min_s, r.times.max_s)
        r.io.reset()

    def _next_step(self, tick: Tick, window: sweep.Window) -> None:
        r = self.running
        assert r is not None and tick.ts is not None
        phase = r.phases[r.phase]
        speed = window.speed_kb_s or 0.0
        limits = scope.limits(tick, r.array)
        held = sweep.held_at_min(speed, limits.speed_min) and other_io_seen(tick, r.array)
        if held:
            # md holds a sync at its min while other I/O runs: such a step measured
            # the other I/O, not the setting. Measure it again, until the hold has lasted so
            # long that the disks themselves probably run at that speed.
            r.held_since = window.points[0][0] if r.held_since is None else r.held_since
            if tick.ts - r.held_since < sweep.HOLD_STEPS * window.max_s:
                self._store_step(r, window, f"{sweep.HELD}: measured again")
                r.window = sweep.Window(tick.ts, 0.0, window.min_s, window.max_s)
                return
        r.held_since = None
        at_limit = physics.held_by_max(speed, limits)
        notes = ["at the speed limit: larger values cannot be told apart"] if at_limit else []
        notes += [f"{sweep.HELD} all along: counted"] if held else []
        noise = window.noise()
        if math.isinf(noise):  # no line through its readings: too few, or no progress at all
            notes.append("too few readings to tell its speed")
        elif noise > sweep.NOISE:
            notes.append(f"speed known to ±{noise:.0%} only")
        if r.ladder_top is not None and not phase.climbs and r.role == "reference":
            notes += r.recheck(speed)
        own = r.io.kb_s()
        if phase.climbs and (change := r.load_changed(own, speed)) is not None:
            if r.retries.get(r.value, 0) < sweep.MAX_RETRIES:
                r.retries[r.value] = r.retries.get(r.value, 0) + 1
                self._store_step(r, window, f"not counted: {change}: measured again")
                r.window = sweep.Window(tick.ts, 0.0, window.min_s, window.max_s)
                r.io.reset()
                return
            self._forget("measured under another load")
            notes.append(f"{change} for good: compared only with the steps after it")
        r.own_kb_s = own
        r.measured.append(sweep.MeasuredStep(r.value, r.role, speed))
        r.counted.append(r.seq)
        self._store_step(r, window, "; ".join(notes) or None)
        if at_limit:
            r.queue = [v for v in r.queue if v < r.value]
        if not phase.climbs:
            again = r.measure_again_if_the_reference_moved()
            if again is not None:
                stored.note_step(self.applier.conn, r.id, *again)
            if r.role == "candidate":
                self._hold(phase.reference, "reference", tick.ts)
                return
        if r.queue:
            self._hold(r.queue.pop(0), "candidate", tick.ts)
            return
        scored = sweep.scores(r.measured, phase.climbs)
        r.chosen[phase.knob] = sweep.choose(scored)
        steps = {seq: step.value for seq, step in zip(r.counted, r.measured, strict=True)}
        record.store_scores(self.applier.conn, r.id, steps, scored)
        log.info("auto-tune on %s: %s scores %s, keeps %s", r.array, phase.knob, scored, r.chosen)
        r.ladder_top = r.ladder_ended(r.chosen[phase.knob]) if phase.climbs else None
        self._next_phase(tick.ts)

    def _forget(self, why: str) -> None:
        r = self.running
        assert r is not None
        for seq in r.forget_counted():
            note = f"{why}: not compared with the steps after it"
            stored.note_step(self.applier.conn, r.id, seq, note)

    def _next_phase(self, now: float) -> None:
        r = self.running
        assert r is not None
        r.phase += 1
        while r.phase < len(r.phases) and self._nothing_to_read_ahead(r):
            r.phase += 1
        if r.phase < len(r.phases):
            self._begin_phase(now)
            return
        kept = ", ".join(setting_label(k, v) for k, v in r.chosen.items())
        self._write(r.chosen, f"auto-tune kept {kept}")
        self._finish("done", "; ".join([f"kept {kept}", *r.remarks]))

    def _nothing_to_read_ahead(self, r: Running) -> bool:
        """Whether the read-ahead phase would measure nothing: md's sync reads its members
        directly, so the md device's read-ahead serves only the array's users, and none read it
        during the sweep so far. Its steps would time noise (on the real 5.10 grow they were 10
        of 13); the value found is kept, and the phase is said to be skipped."""
        phase = r.phases[r.phase]
        if phase.knob != "read_ahead_kb":
            return False
        kib_s = r.reads.nobody_reads()
        if kib_s is None:
            return False
        r.chosen[phase.knob] = phase.reference
        r.remarks.append(
            f"read-ahead kept as found, not measured: nothing read {r.array} during the sweep "
            f"({kib_s:.0f} KiB/s), and md's {r.action} does not go through it"
        )
        log.info("auto-tune on %s: no reads on the array, read-ahead not swept", r.array)
        return True

    def _write(self, wanted: dict[str, int], label: str) -> bool:
        """One journaled apply of the knobs that differ; True when anything was written."""
        r = self.running
        assert r is not None
        conn = self.applier.conn
        opening = journal.open_session(conn) is None
        op_id = writes.write(self.applier, r.array, wanted, label)
        if op_id is None:
            return False
        r.ops.add(op_id)
        session = journal.open_session(conn)
        if r.session_id is None and session is not None:
            r.session_id = session.id
            stored.note_session(conn, r.id, session.id, opening)
        return True

    def _store_step(self, r: Running, window: sweep.Window | None, note: str | None) -> None:
        written = window.written if window else self.applier.clock()
        knob = r.phases[r.phase].knob
        conn = self.applier.conn
        record.store_step(conn, r.id, r.seq, knob, r.value, r.role, written, window, note)
        r.seq += 1

    # ---- ending
    def cancel(self, why: str) -> None:
        """A person acted: the sweep stops and leaves the knobs to them."""
        if self.running is not None:
            self._finish("cancelled", why)

    def _abort(self, why: str) -> None:
        """Stop and put back the values found when the sweep began."""
        r = self.running
        assert r is not None
        log.warning("auto-tune on %s aborted: %s", r.array, why)
        problem = writes.restore(self.applier, r.id, r.start_values, r.array, why)
        self._finish("aborted", why if problem is None else f"{why}; {problem}")

    def _finish(self, state: str, reason: str) -> None:
        """End the sweep; should its row not be written (a full disk), the next start's
        recover() finds it running and puts the values back then."""
        r = self.running
        assert r is not None
        log.info("auto-tune on %s %s: %s", r.array, state, reason)
        try:
            stored.finish_sweep(
                self.applier.conn, r.id, state, reason, self.applier.clock(), r.chosen or None
            )
        except db.Error as error:
            log.error(
                "auto-tune sweep %d ended (%s) but cannot be recorded: %s", r.id, state, error
            )
        finally:
            # Only now: a request reading between the two (without the tick's lock) saw a row
            # still "running" of a sweep no longer in memory, and answered "ended, its record
            # waits for the disk to have room" for a sweep that was being recorded.
            self.running = None

    def recover(self) -> None:
        """At start-up: a sweep a crash cut short puts back the values it found."""
        writes.recover(self.applier)

    # ---- the read side
    def view(self, conn: db.Connection) -> Sweep | None:
        """The latest sweep with its steps, and the step measured now while it runs."""
        r = self.running
        now = r.step_now(self.applier.clock()) if r else None
        return record.view(conn, r.id if r else None, now)
