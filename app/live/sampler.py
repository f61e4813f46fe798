"""sample_once(): read mdstat + sysfs, keep runs up to date, store one row per array; and the loop.

A failed read or write is logged and retried next tick. Ticks that could not be written (disk
full, database locked) wait in memory and are replayed in order, runs included, before the next
one, so nothing is lost and every sample still lands in the right run.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from app.clock import Timeline, fixed_rate
from app.diagnosis.verdicts import VerdictChange
from app.kernel import mdstat_parse
from app.kernel.host import ARRAY_NAME, Host
from app.live import run_tracking
from app.live.diagnosis_tracker import Tracker
from app.live.idle import IdleFilter
from app.live.tick import Tick
from app.md import mdstat
from app.md.attributes import ArraySysfs, EffectiveLimits
from app.md.disks import MemberDisk
from app.store import clockstep, db, rollup, run_log
from app.store.history import add_event

log = logging.getLogger(__name__)

Clock = Callable[[], float]
# Ticks kept in memory while the database cannot be written (about a day at 5 s).
MAX_PENDING_TICKS = 17_280
DOWNSAMPLE_EVERY_S = 3600.0
STORE_CHUNK_TICKS = 120  # ticks a transaction writes: 10 minutes at 5 s
ERROR_LOG_EVERY_S = 60.0  # one line a minute while samples cannot be written
DISK_FULL = "samples are not being recorded: the disk holding the database is full"


@dataclass(frozen=True)
class PendingTick:
    """One tick's readings, waiting to be written."""

    now: float
    parsed: mdstat.MdStat
    rows: list[run_log.SampleRow]  # each array's, its run not known yet
    verdict_changes: list[VerdictChange] = field(
        default_factory=list
    )  # stored as "diagnosis" events

    def shifted(self, delta: float) -> "PendingTick":
        """The same tick on a wall clock that has since moved by `delta` seconds."""
        rows = [row._replace(ts=row.ts + delta) for row in self.rows]
        changes = [replace(c, ts=c.ts + delta) for c in self.verdict_changes]
        return replace(self, now=self.now + delta, rows=rows, verdict_changes=changes)


class Sampler:
    """Owns the sampler's writes to SQLite: samples, runs, the ticks waiting to be written."""

    def __init__(
        self,
        host: Host,
        conn: db.Connection,
        clock: Clock | Timeline = time.time,
        downsample_after_days: float = 7.0,
        keep_days: float | None = None,
    ) -> None:
        self.host = host
        self.conn = conn
        self.clock = clock
        # Steps of the wall clock not yet stored: (the tick's time, seconds moved).
        self.clock_steps: list[tuple[float, float]] = []
        self.segment = clockstep.segment(conn)
        self.downsample_after_s = downsample_after_days * 86400
        self.keep_s = keep_days * 86400 if keep_days is not None else None
        # The database's size as the last maintenance measured it: the page's footer shows this,
        # and no request opens a file for it.
        self.size: db.Size | None = None
        self.pending: list[PendingTick] = []
        self.last_downsample = 0.0
        # The hourly maintenance under way, taken a step at a time between ticks by the loop.
        self.maintenance: Iterator[None] | None = None
        self.stepping = False  # a step runs now (in the loop's thread)
        # Monotonic time since when samples cannot be written for want of disk space (None: they
        # can), and of the last log line saying a write failed.
        self.disk_full_since: float | None = None
        self.error_logged: float | None = None
        self.latest: Tick = Tick()
        self.diagnosis = Tracker(host)
        self.idle = IdleFilter()
        # The members whose disks `disks` describes (read again when they change).
        self.sized: frozenset[str] = frozenset()
        self.disks: dict[str, MemberDisk] = {}
        self.disk_rotational: dict[str, bool] = {}

    @property
    def clock(self) -> Clock:
        return self.timeline

    @clock.setter
    def clock(self, clock: Clock | Timeline) -> None:
        # A plain clock (tests, the demo) never steps; the app's Timeline reports steps.
        self.timeline = clock if isinstance(clock, Timeline) else fixed_rate(clock)

    def sample_once(self) -> Tick:
        reading = self.timeline.read()
        now = reading.wall
        tick = Tick(ts=now, mono=reading.mono, clock_step=reading.step)
        if reading.step:
            self._clock_stepped(now, reading.step)
        try:
            text = self.host.read_mdstat()
            parsed = mdstat_parse.parse(text) if text is not None else mdstat.MdStat(None, ())
            tick.found_mdstat = text is not None
        except (OSError, ValueError) as error:
            log.warning("cannot read mdstat: %s", error)
            tick.error = f"cannot read mdstat: {error}"
            self.latest = tick
            return tick
        for warning in parsed.warnings:
            log.warning("mdstat: %s", warning)
        tick.parsed = parsed
        tick.any_running = any(a.syncing for a in parsed.arrays)
        # One read of the global limits per tick, not per array: the tick's CPU stays flat.
        tick.global_limits = self.host.read_global_speed_limits()
        tick.sysfs = {
            a.name: self.host.read_array_sysfs(a.name)
            for a in parsed.arrays
            if ARRAY_NAME.fullmatch(a.name)
        }
        tick.limits = {a.name: tick.speed_limits(a.name) for a in parsed.arrays}
        tick.mem_available_kib = self.host.read_meminfo().get("MemAvailable")
        tick.disks = self._disks(parsed)
        tick.disk_kib = {d.disk: d.size_kib for d in tick.disks.values() if d.size_kib is not None}
        tick.disk_rotational = self.disk_rotational
        try:
            wanted = self.diagnosis.devices(parsed)
            tick.diskstats = self.host.read_diskstats(wanted) if wanted else {}
            tick.diagnoses, tick.verdict_changes = self.diagnosis.tick(
                now, parsed, tick.sysfs, tick.limits, tick.diskstats, tick.mem_available_kib
            )
        except (OSError, ValueError) as error:  # the verdicts wait; the samples must not
            log.warning("cannot diagnose this tick: %s", error)
        limits, sysfs = tick.speed_limits, tick.sysfs
        rows = [
            self._row(a, now, reading.mono, limits(a.name), sysfs.get(a.name))
            for a in parsed.arrays
        ]
        self.pending.append(PendingTick(now, parsed, rows, tick.verdict_changes))
        try:
            self._store(tick)
        except db.Error as error:
            del self.pending[:-MAX_PENDING_TICKS]
            self._not_written(error, reading.mono)
            tick.error = f"cannot write samples: {error}"
        else:
            if self.disk_full_since is not None:
                log.warning("samples are recorded again: the disk holding the database has room")
            self.disk_full_since = self.error_logged = None
        if self.latest.ts is None:
            # The first tick, which start-up awaits before its first answer: only measure. A
            # month to thin, or an old file to convert (7.8 s on a 30-day file), waits for the
            # loop.
            self.measure(now)
        elif self.maintenance is None and now - self.last_downsample >= DOWNSAMPLE_EVERY_S:
            self.maintenance = self._maintenance(now)  # the loop takes its steps between ticks
        self.latest = tick
        return tick

    def _not_written(self, error: db.Error, mono: float) -> None:
        """Say so in the log at most once a minute (a full disk fails every tick), and note
        when the disk became full: the page, /healthz and a change's refusal say it."""
        full = db.disk_full(error)
        if full and self.disk_full_since is None:
            self.disk_full_since = mono
        if self.error_logged is None or mono - self.error_logged >= ERROR_LOG_EVERY_S:
            self.error_logged = mono
            log.error(
                "cannot write samples (%d ticks kept in memory): %s", len(self.pending), error
            )

    def maintain(self, now: float) -> None:
        """All of the maintenance at once (tests, tools); the loop takes it step by step."""
        for _ in self._maintenance(now):
            pass

    def maintenance_step(self) -> bool:
        """One short step of the maintenance under way; False when there is none (left)."""
        if self.maintenance is None:
            return False
        self.stepping = True
        try:
            next(self.maintenance)
            return True
        except StopIteration:
            self.maintenance = None
            return False
        except db.Error as error:  # interrupted by a stop, or a full disk: next hour
            log.warning("maintenance stopped, will run again: %s", error)
            self.maintenance = None
            return False
        finally:
            self.stepping = False

    def interrupt_maintenance(self) -> None:
        """A stop: abandon the maintenance (done again at the next start), and cut short the
        one step that cannot be split (converting an old file), from another thread."""
        if self.stepping:
            self.conn.interrupt()

    def _maintenance(self, now: float) -> Iterator[None]:
        """Thin old samples, drop those past MDBOOST_KEEP_DAYS, give the space back, and
        measure what the file now takes: a step at a time, none of them long."""
        self.last_downsample = now
        drop_before = now - self.keep_s if self.keep_s is not None else None
        started = time.monotonic()
        log.info(
            "maintenance: thinning samples older than %g days", self.downsample_after_s / 86400
        )
        deleted = 0
        for rows in rollup.downsample_steps(self.conn, now - self.downsample_after_s, drop_before):
            deleted += rows
            yield
        for _ in db.give_back_steps(self.conn):
            yield
        self.measure(now)
        db.release_memory(self.conn)  # the pages it read to thin and delete
        log.info(
            "maintenance: %d old samples thinned in %.1f s", deleted, time.monotonic() - started
        )

    def measure(self, now: float) -> None:
        """What the file takes, for the page's footer."""
        try:
            self.size = db.measure(self.conn, now)
        except (OSError, db.Error) as error:
            log.warning("cannot measure the database's size: %s", error)

    def _disks(self, parsed: mdstat.MdStat) -> dict[str, MemberDisk]:
        """The disk under each member (size, model, and whether it spins, kept beside them);
        /sys is read only when the members change."""
        members = frozenset(d.name for a in parsed.arrays for d in a.devices)
        if members != self.sized:
            try:
                self.disks = self.host.read_member_disks(sorted(members))
                spinning = sorted({d.disk for d in self.disks.values()})
                self.disk_rotational = self.host.read_rotational(spinning)
            except (OSError, ValueError) as error:
                log.warning("cannot read the member disks' sizes and models: %s", error)
                self.disks, self.disk_rotational = {}, {}
            self.sized = members
        return self.disks

    def _clock_stepped(self, now: float, step: float) -> None:
        """The wall clock moved: what came before this tick goes onto the new wall time, in
        memory now and in SQLite with this tick's rows; the step is stored as an event."""
        log.warning(
            "the wall clock moved %+.0f s (%+.2f h) against the monotonic clock: earlier samples "
            "are shifted onto the new time",
            step,
            step / 3600,
        )
        self.clock_steps.append((now, step))
        self.pending = [p.shifted(step) for p in self.pending]
        self.diagnosis.shift(step)
        self.idle.shift(step)
        self.last_downsample += step

    def _row(
        self,
        array: mdstat.Array,
        now: float,
        mono: float,
        limits: EffectiveLimits,
        sysfs: ArraySysfs | None,
    ) -> run_log.SampleRow:
        sync = array.sync if array.syncing else None
        row = run_log.SampleRow(
            array=array.name,
            state=array.state,
            status=array.status,
            mismatch_cnt=None,
            mono=mono,
            ts=now,
            action=sync.action if sync else None,
            percent=sync.percent if sync else None,
            done_blocks=sync.done_blocks if sync else None,
            total_blocks=sync.total_blocks if sync else None,
            speed_kb_s=sync.speed_kb_s if sync else None,
            finish_min=sync.finish_min if sync else None,
        )
        if sysfs is None:
            return row
        speed_min, speed_max = limits
        return row._replace(
            degraded=sysfs.degraded,
            sync_speed_kb_s=sysfs.sync_speed_kb_s,
            mismatch_cnt=sysfs.mismatch_cnt,
            stripe_cache_size=sysfs.stripe_cache_size,
            speed_min_kb_s=speed_min.kb_s if speed_min else None,
            speed_max_kb_s=speed_max.kb_s if speed_max else None,
        )

    def _store(self, tick: Tick) -> None:
        """Write every pending tick in order, with its run bookkeeping, STORE_CHUNK_TICKS to a
        transaction: a backlog from a full disk goes back in pieces that fit the room that came
        back, each one kept once written. An idle array's sample is stored only when it says
        something new (app/live/idle.py)."""
        tick.written = 0
        while self.pending:
            chunk = self.pending[:STORE_CHUNK_TICKS]
            reported = len(tick.finished_runs)
            try:
                self._write_pending(self.conn, tick, chunk)
            except BaseException:
                self.idle.rollback()
                del tick.finished_runs[reported:]  # rolled back: reported when replayed
                raise
            self.idle.commit()
            self.clock_steps.clear()
            tick.written += sum(len(p.rows) for p in chunk)  # taken in, stored or not needed
            del self.pending[: len(chunk)]
            if self.pending:  # the next piece reuses the WAL's room rather than growing it
                db.checkpoint(self.conn)

    def _write_pending(self, conn: db.Connection, tick: Tick, chunk: list[PendingTick]) -> None:
        with db.write_transaction(conn):
            moved = sum(step for _, step in self.clock_steps)
            if moved:
                clockstep.shift(conn, moved, self.segment)
            for pending in chunk:
                open_runs = run_log.open_runs(conn)
                run_ids = {}
                for array, sample in zip(pending.parsed.arrays, pending.rows, strict=True):
                    run = open_runs.pop(array.name, None)
                    run_id = run_ids[array.name] = run_tracking.track(
                        conn,
                        self.host,
                        array,
                        sample.degraded,
                        run,
                        pending.now,
                        tick.finished_runs,
                        sample.speed_max_kb_s,
                    )
                    sample = sample._replace(run_id=run_id)
                    if self.idle.keep(sample):
                        run_log.add_sample(conn, sample)
                    if run_id is not None:
                        run_log.add_to_run(conn, run_id, sample.speed_kb_s, sample.percent)
                for change in pending.verdict_changes:
                    # A past run then shows why it was slow when.
                    run_id = run_ids.get(change.array)
                    add_event(conn, change.ts, change.array, run_id, "diagnosis", change.detail())
                for run in open_runs.values():
                    run_tracking.finish(conn, run, "vanished", pending.now, tick.finished_runs)
            for ts, step in self.clock_steps:
                _store_clock_step(conn, ts, step)


def _store_clock_step(conn: db.Connection, ts: float, step: float) -> None:
    """One event per open run (the run's page and forecast show it), else one for the box."""
    detail = {"moved_s": round(step, 3)}
    open_runs = run_log.open_runs(conn).values()
    for run in open_runs:
        add_event(conn, ts, run.array, run.id, "clock_step", detail)
    if not open_runs:
        add_event(conn, ts, None, None, "clock_step", detail)


def interval_seconds(tick: Tick, fixed: float | None, busy: float, idle: float) -> float:
    if fixed is not None:
        return fixed
    return busy if tick.any_running else idle


async def run_forever(
    sampler: Sampler,
    stop: asyncio.Event,
    next_interval: Callable[[Tick], float],
    on_tick: Callable[[Tick], None] | None = None,
    first: Tick | None = None,
) -> None:
    """Sample until `stop` is set; an exception in one tick never ends the loop. `first`: a
    tick already taken (at start-up), so the loop begins by waiting its interval."""
    if first is not None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=next_interval(first))
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        try:
            tick = await asyncio.to_thread(sampler.sample_once)
            if on_tick is not None:
                await asyncio.to_thread(on_tick, tick)
        except Exception:
            log.exception("sampler tick failed; retrying next tick")
            tick = Tick(error="tick failed")
        due = loop.time() + next_interval(tick)
        # The maintenance's steps fill the time until the next tick: sampling never waits for
        # all of it, and a stop waits for one step at most.
        while not stop.is_set() and loop.time() < due:
            if not await asyncio.to_thread(sampler.maintenance_step):
                break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=max(0.0, due - loop.time()))
