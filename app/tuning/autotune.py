"""Auto-tune (issue 18): find this box's best stripe cache and read-ahead by measuring them on the
sync that runs now.

POST /api/autotune plans a sweep (app/tuning/sweep.py) and writes its first setting. Then each
sampler tick hands the array's progress to the step being measured, so measuring adds no kernel
reads of its own, and a step that has measured enough gives way to the next. At the end the
smallest setting within 5 % of the best is kept. Every write is an ordinary journaled apply
(preset "auto-tune"): revert restores the originals, and a crash mid-write recovers like any
apply. The sweep's row keeps the values found when it began, so an abort (MemAvailable under the
floor, the box's own I/O starving, a write the kernel refuses, the sync ending) and a restart
after a crash mid-sweep put exactly those back.
"""

import json
import logging
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from app.config import Settings
from app.forecast import physics
from app.kernel import mdstat
from app.kernel.host import ARRAY_NAME
from app.kernel.sysfs import DiskStat, waited_ms_per_request
from app.live.arrays import failed_names
from app.live.sampler import Tick
from app.store import db
from app.tuning import journal, sweep
from app.tuning.apply import Applier, JournalUnavailable, TuningFailed
from app.tuning.catalogue import (
    CATALOGUE,
    RAID_WITH_STRIPE_CACHE,
    md_floor,
    read_knob,
    stripe_cache_mib,
)
from app.tuning.plan import Change, Plan, budget_mib, member_disks, stripe_cache_total_mib

log = logging.getLogger(__name__)

PRESET = "auto-tune"
TUNABLE_ACTIONS = ("resync", "recovery", "reshape")
KNOB_LABELS = {"stripe_cache_size": "stripe cache", "read_ahead_kb": "read-ahead"}


class AutoTuneRefused(Exception):
    """A sweep cannot start here and now; nothing was written."""


@dataclass
class Running:
    """The sweep being measured, in memory; its row and steps are in SQLite."""

    id: int
    array: str
    run_id: int | None
    action: str
    start_values: dict[str, int]
    phases: list[sweep.Phase]
    knee: float | None
    phase: int = 0
    queue: list[int] = field(default_factory=list)  # candidates of this phase still to measure
    role: str = "reference"
    value: int = 0  # the value of the phase's knob held in this step
    window: sweep.Window | None = None
    measured: list[sweep.Measured] = field(default_factory=list)  # this phase's steps
    counted: list[int] = field(default_factory=list)  # their seq numbers in autotune_steps
    chosen: dict[str, int] = field(default_factory=dict)
    seq: int = 0
    op_ids: set[int] = field(default_factory=set)
    last_op: int = 0  # the journal's newest op id when the sweep last looked
    session_id: int | None = None
    io_before: tuple[float, DiskStat] | None = None  # the array's own I/O when this step began
    before_knee: bool = False  # a grow not yet past its knee: passing it restarts the phase
    held_since: float | None = None  # this step has been held at the min limit since then
    retries: dict[int, int] = field(default_factory=dict)  # value -> times measured again


class AutoTuner:
    """Runs at most one sweep; the caller holds the applier's lock for every method but view."""

    def __init__(self, applier: Applier, settings: Settings) -> None:
        self.applier = applier
        self.settings = settings
        self.running: Running | None = None

    # ---- start
    def start(self, tick: Tick | None, requested: str | None) -> dict[str, Any]:
        if self.running is not None:
            raise AutoTuneRefused(f"a sweep on {self.running.array} is running already")
        array, sysfs_raid_disks = self._array(tick, requested)
        host, conn = self.applier.host, self.applier.conn
        assert tick is not None and tick.parsed is not None and tick.ts is not None
        assert array.sync is not None
        limits = _limits(tick, array.name)
        speed = array.sync.speed_kb_s
        if speed is not None and physics.held_by_max(speed, limits):
            raise AutoTuneRefused(
                f"{array.name} syncs at {speed} KiB/s, held by its max limit "
                f"({physics.ceiling(limits):.0f} KiB/s): a bigger cache cannot make it faster and "
                "measuring through the limit finds nothing. Raise the limit first (boost does)."
            )
        available_mib = host.read_meminfo().get("MemAvailable", 0) / 1024
        if available_mib < self.settings.autotune_mem_floor_mb:
            raise AutoTuneRefused(
                f"MemAvailable is {available_mib:.0f} MiB, under the floor of "
                f"{self.settings.autotune_mem_floor_mb:.0f} MiB: no RAM to try a bigger cache"
            )
        start_values, phases = self._phases(array, tick.parsed, available_mib)
        if not phases:
            raise AutoTuneRefused(f"nothing to try on {array.name}: no knob with a candidate")
        run = conn.execute(
            "SELECT id FROM runs WHERE array = ? AND finished IS NULL", (array.name,)
        ).fetchone()
        with db.write_transaction(conn):
            sweep_id = conn.execute(
                "INSERT INTO autotune_sweeps (array, run_id, started, state, start_values, plan)"
                " VALUES (?, ?, ?, 'running', ?, ?)",
                (
                    array.name,
                    run["id"] if run else None,
                    tick.ts,
                    json.dumps(start_values),
                    json.dumps([p.to_json() for p in phases]),
                ),
            ).lastrowid
        assert sweep_id is not None
        knee = physics.grow_knee(array.level, sysfs_raid_disks)
        done, total = array.sync.done_blocks, array.sync.total_blocks
        self.running = Running(
            id=sweep_id,
            array=array.name,
            run_id=run["id"] if run else None,
            action=array.sync.action,
            start_values=start_values,
            phases=phases,
            knee=knee,
            last_op=_newest_op(conn),
            before_knee=knee is not None
            and done is not None
            and bool(total)
            and done < knee * (total or 0),
        )
        log.info("auto-tune on %s: %s", array.name, [p.to_json() for p in phases])
        try:
            self._begin_phase(self.applier.clock())
        except TuningFailed as failure:
            self._finish("aborted", f"the kernel refused a setting: {failure.message}")
            raise
        except JournalUnavailable as error:
            self._finish("aborted", str(error))
            raise
        started = self.view(conn)
        assert started is not None
        return started

    def _array(
        self, tick: Tick | None, requested: str | None
    ) -> tuple[mdstat.Array, tuple[int, int | None] | None]:
        """The array to sweep, from the sampler's last tick: named, or the one syncing."""
        if tick is None or tick.parsed is None or tick.ts is None:
            raise AutoTuneRefused("the sampler has not read the arrays yet: try again in a moment")
        syncing = [
            a
            for a in tick.parsed.arrays
            if ARRAY_NAME.fullmatch(a.name) and a.sync is not None and a.sync.running
        ]
        if requested is not None:
            array = tick.parsed.array(requested)
            if array is None:
                raise AutoTuneRefused(f"no array named {requested[:40]!r}")
        elif len(syncing) == 1:
            array = syncing[0]
        elif not syncing:
            raise AutoTuneRefused("no array is syncing: auto-tune measures a running sync")
        else:
            names = ", ".join(a.name for a in syncing)
            raise AutoTuneRefused(f"{names} are syncing: name the array to tune")
        if array.sync is None or not array.sync.running or array.sync.action not in TUNABLE_ACTIONS:
            raise AutoTuneRefused(
                f"{array.name} runs no resync, recovery or reshape: nothing to measure on"
            )
        if array.name in failed_names(tick.parsed, self.applier.host):
            raise AutoTuneRefused(f"{array.name} has failed: mdboost never tunes a failed array")
        sysfs = tick.sysfs.get(array.name)
        return array, sysfs.raid_disks if sysfs else None

    def _phases(
        self, array: mdstat.Array, md: mdstat.MdStat, available_mib: float
    ) -> tuple[dict[str, int], list[sweep.Phase]]:
        """The values found now and the phases to sweep, within the RAM budget and the floor."""
        host = self.applier.host
        start: dict[str, int] = {}
        phases: list[sweep.Phase] = []
        for name in ("stripe_cache_size", "read_ahead_kb"):
            knob = CATALOGUE[name]
            if not knob.applies_to(array.level):
                continue
            found = read_knob(host, knob, array.name)
            if found is None or not found.isdigit():
                continue
            start[name] = int(found)
        if "stripe_cache_size" in start and array.level in RAID_WITH_STRIPE_CACHE:
            disks = member_disks(array)
            current = start["stripe_cache_size"]
            others = stripe_cache_total_mib(md, host, skip={array.name})
            share = budget_mib(host, self.settings.max_cache_mb) - others
            floor_mib = self.settings.autotune_mem_floor_mb

            def fits(entries: int) -> bool:
                extra = stripe_cache_mib(entries, disks) - stripe_cache_mib(current, disks)
                return stripe_cache_mib(entries, disks) <= share and (
                    available_mib - extra >= floor_mib
                )

            reshaping = array.sync is not None and array.sync.action == "reshape"
            floor = md_floor(
                "stripe_cache_size", array.level, array.chunk_kb, array.raid_disks, reshaping
            )
            phase = sweep.stripe_cache_phase(current, floor, fits)
            if phase.candidates:
                phases.append(phase)
        if "read_ahead_kb" in start:
            phase = sweep.read_ahead_phase(start["read_ahead_kb"])
            if phase.candidates:
                phases.append(phase)
        return start, phases

    # ---- each tick
    def on_tick(self, tick: Tick) -> None:
        r = self.running
        if r is None or tick.ts is None or tick.parsed is None:
            return  # nothing running, or a tick that could not read mdstat: wait for the next
        why = self._foreign_change(r)
        if why is not None:
            self._finish("cancelled", why)
            return
        array = tick.parsed.array(r.array) if tick.parsed is not None else None
        sync = array.sync if array is not None else None
        if sync is None or not sync.running or sync.action != r.action or sync.done_blocks is None:
            self._abort(f"{r.array}'s {r.action} ended before the sweep did")
            return
        why = self._guard(r, tick.ts)
        if why is not None:
            self._abort(why)
            return
        window = r.window
        assert window is not None
        total = sync.total_blocks or 0
        try:
            if r.before_knee and r.knee is not None and sync.done_blocks >= r.knee * total:
                self._knee_crossed(tick.ts)
                return
            window.add(tick.ts, sync.done_blocks)
            if window.complete():
                self._next_step(tick, window)
        except TuningFailed as failure:
            self._abort(f"the kernel refused a setting: {failure.message}")
        except JournalUnavailable as error:
            self._abort(str(error))
        except sqlite3.Error as error:  # a full disk: the kernel goes back first, as in revert
            self._abort(f"the tuning journal cannot be written ({error})")

    def _foreign_change(self, r: Running) -> str | None:
        """Why the sweep must stop without touching anything: someone else's apply or revert."""
        conn = self.applier.conn
        newer = conn.execute(
            "SELECT id, kind, preset, error FROM tuning_ops WHERE id > ? ORDER BY id", (r.last_op,)
        ).fetchall()
        for op in newer:
            if op["id"] not in r.op_ids:
                if op["kind"] == "revert":
                    return f"reverted during the sweep ({op['error'] or 'requested'})"
                return (
                    f"{op['preset']} was applied during the sweep (by hand or a schedule): it wins"
                )
        r.last_op = max([r.last_op, *(op["id"] for op in newer)])
        return None

    def _guard(self, r: Running, now: float) -> str | None:
        """Why the sweep must stop and put things back: no RAM, or the box's own I/O starving."""
        host, settings = self.applier.host, self.settings
        available = host.read_meminfo().get("MemAvailable")
        if available is not None and available / 1024 < settings.autotune_mem_floor_mb:
            return (
                f"MemAvailable fell to {available / 1024:.0f} MiB, under the floor of "
                f"{settings.autotune_mem_floor_mb:.0f} MiB"
            )
        io = host.read_diskstats().get(r.array)
        if io is None:
            return None
        if r.io_before is None:
            r.io_before = (now, io)
            return None
        since, before = r.io_before
        completed, waited_ms = waited_ms_per_request(before, io)
        limit_ms = settings.autotune_starve_ms
        if waited_ms is not None and waited_ms > limit_ms:
            return (
                f"the box's own requests on {r.array} waited {waited_ms / 1000:.1f} s on average "
                f"(more than {limit_ms / 1000:g} s): its I/O is starving"
            )
        stuck = completed <= 0 and io.in_flight > 0 and before.in_flight > 0
        if stuck and (now - since) * 1000 > limit_ms:
            return (
                f"none of the box's own requests on {r.array} finished for "
                f"{now - since:.0f} s: its I/O is starving"
            )
        return None

    def _knee_crossed(self, now: float) -> None:
        """The grow passed its knee: from here it only writes, so what this phase measured
        before says nothing about the rest. Measure the phase again from its reference."""
        r = self.running
        assert r is not None
        r.before_knee = False
        log.info("auto-tune on %s: the grow passed its knee; measuring the phase again", r.array)
        self._store_step(r, None, "not counted: the grow passed its knee during this step")
        self._begin_phase(now)

    # ---- steps
    def _begin_phase(self, now: float) -> None:
        r = self.running
        assert r is not None
        phase = r.phases[r.phase]
        r.queue = list(phase.candidates)
        r.measured, r.counted, r.retries = [], [], {}
        self._hold(phase.reference, "reference", now)

    def _hold(self, value: int, role: str, now: float) -> None:
        """Write this step's setting (with every earlier phase's choice) and start measuring."""
        r = self.running
        assert r is not None
        phase = r.phases[r.phase]
        r.value, r.role = value, role
        wanted = {**r.chosen, phase.knob: value}
        label = setting_label(phase.knob, value) + (" (reference)" if role == "reference" else "")
        changed = self._write(wanted, f"auto-tune: {label}")
        settle = self.settings.autotune_settle_seconds if changed else 0.0
        r.window = sweep.Window(
            now,
            settle,
            self.settings.autotune_measure_seconds,
            self.settings.autotune_max_measure_seconds,
        )
        r.io_before = None

    def _next_step(self, tick: Tick, window: sweep.Window) -> None:
        r = self.running
        assert r is not None and tick.ts is not None
        phase = r.phases[r.phase]
        speed = window.speed_kb_s or 0.0
        limits = _limits(tick, r.array)
        held = sweep.held_at_min(speed, limits.speed_min)
        if held:
            # md holds a sync at its min while other I/O runs (DESIGN.md): such a step measured
            # the other I/O, not the setting. Measure it again, until the hold has lasted so
            # long that the disks themselves probably run at that speed.
            r.held_since = window.points[0][0] if r.held_since is None else r.held_since
            if tick.ts - r.held_since < sweep.HOLD_STEPS * window.max_s:
                self._store_step(r, window, f"{sweep.HELD}: measured again")
                r.window = sweep.Window(tick.ts, 0.0, window.min_s, window.max_s)
                return
        r.held_since = None
        at_limit = physics.held_by_max(speed, limits)
        note = "at the speed limit: larger values cannot be told apart" if at_limit else None
        note = f"{sweep.HELD} all along: counted" if held else note
        r.measured.append(sweep.Measured(r.value, r.role, speed))
        r.counted.append(r.seq)
        self._store_step(r, window, note)
        if at_limit:
            r.queue = [v for v in r.queue if v < r.value]
        moved = sweep.reference_moved(r.measured)
        if moved is not None and r.retries.get(r.measured[-2].value, 0) < sweep.MAX_RETRIES:
            # The references either side of the candidate disagree: the load changed while it
            # was measured. Measure it again between this reference and the next one.
            candidate = r.measured.pop(-2)
            seq = r.counted.pop(-2)
            r.retries[candidate.value] = r.retries.get(candidate.value, 0) + 1
            r.queue.insert(0, candidate.value)
            self._note_step(r, seq, f"not counted: the reference moved {moved:.0%} around it")
        if r.role == "candidate":
            self._hold(phase.reference, "reference", tick.ts)
            return
        if r.queue:
            self._hold(r.queue.pop(0), "candidate", tick.ts)
            return
        scored = sweep.scores(r.measured)
        r.chosen[phase.knob] = sweep.choose(scored)
        self._store_scores(r, scored)
        log.info("auto-tune on %s: %s scores %s, keeps %s", r.array, phase.knob, scored, r.chosen)
        r.phase += 1
        if r.phase < len(r.phases):
            self._begin_phase(tick.ts)
            return
        kept = ", ".join(setting_label(k, v) for k, v in r.chosen.items())
        self._write(r.chosen, f"auto-tune kept {kept}")
        self._finish("done", f"kept {kept}")

    def _write(self, wanted: dict[str, int], label: str) -> bool:
        """One journaled apply of the knobs that differ; True when anything was written."""
        r = self.running
        assert r is not None
        host, conn = self.applier.host, self.applier.conn
        changes = []
        for name, value in wanted.items():
            knob = CATALOGUE[name]
            current = read_knob(host, knob, r.array)
            if current is None or current == str(value):
                continue
            key = f"{name}@{r.array}"
            reason = "a step of auto-tune's sweep"
            changes.append(Change(key, name, r.array, knob.unit, current, str(value), reason))
        if not changes:
            return False
        opening = journal.open_session(conn) is None
        plan = Plan(PRESET, (r.array,), tuple(changes), (), (), 0.0, 0.0, ())
        result = self.applier.apply(PRESET, plan, step=label)
        r.op_ids.add(result["op_id"])
        r.last_op = max(r.last_op, result["op_id"])
        session = journal.open_session(conn)
        if r.session_id is None and session is not None:
            r.session_id = session["id"]
            with db.write_transaction(conn):
                conn.execute(
                    "UPDATE autotune_sweeps SET session_id = ?, opened_session = ? WHERE id = ?",
                    (session["id"], int(opening), r.id),
                )
        return True

    def _store_step(self, r: Running, window: sweep.Window | None, note: str | None) -> None:
        conn = self.applier.conn
        phase = r.phases[r.phase]
        points = window.points if window else []
        with db.write_transaction(conn):
            conn.execute(
                "INSERT INTO autotune_steps (sweep_id, seq, knob, value, role, written,"
                " measured_from, measured_to, done_blocks, speed_kb_s, note)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    r.id,
                    r.seq,
                    phase.knob,
                    str(r.value),
                    r.role,
                    window.written if window else self.applier.clock(),
                    points[0][0] if points else None,
                    points[-1][0] if points else None,
                    points[-1][1] - points[0][1] if points else None,
                    window.speed_kb_s if window else None,
                    note,
                ),
            )
        r.seq += 1

    def _note_step(self, r: Running, seq: int, note: str) -> None:
        conn = self.applier.conn
        with db.write_transaction(conn):
            conn.execute(
                "UPDATE autotune_steps SET note = ? WHERE sweep_id = ? AND seq = ?",
                (note, r.id, seq),
            )

    def _store_scores(self, r: Running, scored: dict[int, float]) -> None:
        """Each counted step of the phase gets its value's score."""
        conn = self.applier.conn
        with db.write_transaction(conn):
            for seq, step in zip(r.counted, r.measured, strict=True):
                conn.execute(
                    "UPDATE autotune_steps SET score = ? WHERE sweep_id = ? AND seq = ?",
                    (round(scored[step.value], 3), r.id, seq),
                )

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
        problem = self._restore(r.id, r.start_values, r.array, why)
        self._finish("aborted", why if problem is None else f"{why}; {problem}")

    def _restore(
        self, sweep_id: int, start_values: dict[str, int], array: str, why: str
    ) -> str | None:
        """Put the sweep's knobs back as they were when it began; a problem in words, or None."""
        conn = self.applier.conn
        row = conn.execute("SELECT * FROM autotune_sweeps WHERE id = ?", (sweep_id,)).fetchone()
        session = journal.open_session(conn)
        if session is None:
            return None
        opened = bool(row["opened_session"]) or (
            row["session_id"] is None and session["started"] >= row["started"]
        )
        try:
            if opened:
                self.applier.revert_locked(f"auto-tune stopped: {why}")
            else:
                self._write_back(start_values, array)
        except TuningFailed as failure:
            return f"putting the values back failed: {failure.message}"
        except JournalUnavailable as error:
            return str(error)
        return None

    def _write_back(self, start_values: dict[str, int], array: str) -> None:
        host = self.applier.host
        changes = []
        for name, value in start_values.items():
            knob = CATALOGUE[name]
            current = read_knob(host, knob, array)
            if current is not None and current != str(value):
                changes.append(
                    Change(f"{name}@{array}", name, array, knob.unit, current, str(value), "")
                )
        if changes:
            plan = Plan(PRESET, (array,), tuple(changes), (), (), 0.0, 0.0, ())
            self.applier.apply(PRESET, plan, step="auto-tune put back the values it found")

    def _finish(self, state: str, reason: str) -> None:
        """End the sweep; should its row not be written (a full disk), the next start's
        recover() finds it running and puts the values back then."""
        r = self.running
        assert r is not None
        self.running = None
        conn = self.applier.conn
        log.info("auto-tune on %s %s: %s", r.array, state, reason)
        try:
            with db.write_transaction(conn):
                conn.execute(
                    "UPDATE autotune_sweeps SET state = ?, reason = ?, finished = ?, chosen = ? "
                    "WHERE id = ?",
                    (
                        state,
                        reason,
                        self.applier.clock(),
                        json.dumps(r.chosen) if r.chosen else None,
                        r.id,
                    ),
                )
        except sqlite3.Error as error:
            log.error(
                "auto-tune sweep %d ended (%s) but cannot be recorded: %s", r.id, state, error
            )

    def recover(self) -> None:
        """At start-up: a sweep a crash cut short puts back the values it found."""
        conn = self.applier.conn
        row = conn.execute("SELECT * FROM autotune_sweeps WHERE state = 'running'").fetchone()
        if row is None:
            return
        why = "mdboost stopped during the sweep"
        problem = self._restore(row["id"], json.loads(row["start_values"]), row["array"], why)
        with db.write_transaction(conn):
            conn.execute(
                "UPDATE autotune_sweeps SET state = 'interrupted', reason = ?, finished = ? "
                "WHERE id = ?",
                (why if problem is None else f"{why}; {problem}", self.applier.clock(), row["id"]),
            )
        log.warning(
            "auto-tune sweep %d on %s: %s; its values are back", row["id"], row["array"], why
        )

    # ---- the read side
    def view(self, conn: sqlite3.Connection) -> dict[str, Any] | None:
        """The latest sweep with its steps, and the step measured now while it runs."""
        row = conn.execute("SELECT * FROM autotune_sweeps ORDER BY id DESC LIMIT 1").fetchone()
        if row is None:
            return None
        steps = conn.execute(
            "SELECT * FROM autotune_steps WHERE sweep_id = ? ORDER BY seq", (row["id"],)
        ).fetchall()
        out = {
            "id": row["id"],
            "array": row["array"],
            "state": row["state"],
            "reason": row["reason"],
            "started": row["started"],
            "finished": row["finished"],
            "start_values": json.loads(row["start_values"]),
            "plan": json.loads(row["plan"]),
            "chosen": json.loads(row["chosen"]) if row["chosen"] else None,
            "steps": [
                {
                    "knob": s["knob"],
                    "label": setting_label(s["knob"], int(s["value"])),
                    "value": int(s["value"]),
                    "role": s["role"],
                    "speed_kb_s": s["speed_kb_s"],
                    "score": s["score"],
                    "note": s["note"],
                    "measured_from": s["measured_from"],
                    "measured_to": s["measured_to"],
                }
                for s in steps
            ],
            "now": None,
        }
        r = self.running
        if row["state"] == "running" and (r is None or r.id != row["id"]):
            # Ended while its row could not be written (a full disk): recover() records it.
            out["state"], out["reason"] = "ended", "its record waits for the disk to have room"
        if r is not None and r.id == row["id"]:
            knob = r.phases[r.phase].knob
            out["now"] = {
                "knob": knob,
                "label": setting_label(knob, r.value),
                "value": r.value,
                "role": r.role,
            }
        return out


def setting_label(knob: str, value: int) -> str:
    """'stripe cache 4096', 'read-ahead 4096 KiB': a step as the page and the chart name it."""
    unit = " KiB" if knob == "read_ahead_kb" else ""
    return f"{KNOB_LABELS[knob]} {value}{unit}"


def _limits(tick: Tick, array: str) -> physics.Limits:
    """The array's effective limits as the tick read them: its own when local, else global."""
    sysfs = tick.sysfs.get(array)
    global_min, global_max = tick.global_limits
    low = sysfs.sync_speed_min.kb_s if sysfs and sysfs.sync_speed_min else global_min
    high = sysfs.sync_speed_max.kb_s if sysfs and sysfs.sync_speed_max else global_max
    cache = sysfs.stripe_cache_size if sysfs else None
    return physics.Limits(low, high, cache)


def _newest_op(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT MAX(id) FROM tuning_ops").fetchone()
    return int(row[0] or 0)
