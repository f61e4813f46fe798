"""The sampler's side of "why is it slow?": a few cheap reads per tick, rates over a window,
the rules, the hysteresis, and the verdict changes worth an event.

Per tick it reads its devices' lines of /proc/diskstats and /proc/PID/stat of each running
array's md threads (MemAvailable once a window). Finding those threads means listing /proc, so
it is done when a run starts and then at most once a minute while one is missing; every
/proc/PID/io is read only while other I/O competes with a sync, at most every IO_SCAN_S.
"""

import collections
from collections.abc import Mapping
from dataclasses import dataclass, field

from app.diagnosis.hysteresis import Hysteresis
from app.diagnosis.rules import MemberIo, Observation, competing_io, judge
from app.diagnosis.thresholds import threshold
from app.diagnosis.verdicts import Diagnosis, VerdictChange, shown_verdict
from app.diagnosis.window import Counters, kib_s, member_io
from app.kernel.host import ARRAY_NAME, CLOCK_TICKS, Host
from app.kernel.sysfs import parse_int
from app.live.process_io import MD_THREAD, IoScan
from app.md import mdstat
from app.md.attributes import ArraySysfs, EffectiveLimits
from app.md.disks import SECTOR_KIB, DiskStat

THREAD_SCAN_S = 60.0  # list /proc for md threads at most this often while one is missing


@dataclass
class _ArrayState:
    hysteresis: Hysteresis
    points: collections.deque[Counters] = field(default_factory=collections.deque)
    threads: dict[str, int] = field(default_factory=dict)  # thread name -> pid
    lost_thread: bool = False  # one ended (a sync thread restarts with a new pid): look again
    group_thread_cnt: int | None = None
    group_thread_cnt_read: bool = False
    primary: str | None = None
    # What tuning sets as the last tick read it: (min, max KiB/s, stripe cache entries).
    tuned: tuple[int | None, int | None, int | None] | None = None


class Tracker:
    """Keeps each running array's window and hysteresis between ticks."""

    def __init__(self, host: Host, hold_s: float | None = None) -> None:
        self.host = host
        self.hold_s = hold_s
        self.window_s = threshold("window_s")
        self.arrays: dict[str, _ArrayState] = {}
        self.whole_disks: dict[str, str | None] = {}
        self.last_thread_scan = float("-inf")
        self.io_scan = IoScan(host)
        self.last_scan_wanted = False
        self.memory: tuple[float, int | None] | None = None  # (read at, MemAvailable KiB)

    def shift(self, delta: float) -> None:
        """The wall clock stepped by `delta` s: every time kept moves with it, so windows and
        streaks span the same monotonic seconds as before."""
        for state in self.arrays.values():
            state.hysteresis.shift(delta)
            for point in state.points:
                point.ts += delta
        self.last_thread_scan += delta
        self.io_scan.shift(delta)
        if self.memory is not None:
            self.memory = (self.memory[0] + delta, self.memory[1])

    def tick(
        self,
        now: float,
        parsed: mdstat.MdStat,
        sysfs: dict[str, ArraySysfs],
        limits: Mapping[str, EffectiveLimits],
        disks: dict[str, DiskStat],
        mem_available_kib: int | None,
    ) -> tuple[dict[str, Diagnosis], list[VerdictChange]]:
        """This tick's verdicts, from the tick's readings: `disks` is /proc/diskstats for
        devices(parsed), `mem_available_kib` /proc/meminfo's MemAvailable."""
        running = _running(parsed)
        for gone in set(self.arrays) - {a.name for a in running}:
            del self.arrays[gone]  # its run ended: the next one starts with a clean slate
        if not running:
            return {}, []
        memory = self._mem_available(now, mem_available_kib)
        self._find_threads(now, running)
        if self.last_scan_wanted:
            self.io_scan.scan(now)
        diagnoses, changes = {}, []
        want_scan = False
        for array in running:
            state = self._state(array.name)
            tuned = _tuned(limits.get(array.name, (None, None)), sysfs.get(array.name))
            if state.tuned is not None and tuned != state.tuned:
                # A knob changed: rates and streaks from before it judge another machine. The
                # verdict is judged again from this tick on, never left from before the change.
                state.points.clear()
                state.hysteresis = Hysteresis(self.hold_s)
            state.tuned = tuned
            obs = self._observe(
                now,
                array,
                sysfs.get(array.name),
                limits.get(array.name, (None, None)),
                disks,
                memory,
                state,
            )
            findings = judge(obs)
            # Name who competes as soon as it may matter, so the names are there when it shows.
            want_scan = want_scan or competing_io(obs) is not None
            shown = state.hysteresis.update(now, findings)
            diagnosis = Diagnosis(
                array.name,
                now,
                tuple(shown_verdict(s) for s in shown),
                state.hysteresis.pending(now),
                obs,
            )
            diagnoses[array.name] = diagnosis
            primary = diagnosis.primary
            if (primary.verdict if primary else None) != state.primary:
                changes.append(
                    VerdictChange(
                        array.name,
                        now,
                        primary.verdict if primary else None,
                        state.primary,
                        primary.sentence if primary else None,
                        primary.numbers if primary else {},
                    )
                )
                state.primary = primary.verdict if primary else None
        self.last_scan_wanted = want_scan
        if not want_scan:
            self.io_scan.forget()
        return diagnoses, changes

    # ---- one array
    def _observe(
        self,
        now: float,
        array: mdstat.Array,
        sysfs: ArraySysfs | None,
        limits: EffectiveLimits,
        disks: dict[str, DiskStat],
        memory: int | None,
        state: _ArrayState,
    ) -> Observation:
        members, wanted = self._devices(array)
        thread_ticks = {}
        for name, pid in list(state.threads.items()):
            stat = self.host.read_pid_stat(pid)
            if stat is None or stat.comm != name:
                del state.threads[name]  # ended (a finished resync thread) or the pid was reused
                state.lost_thread = True
                continue
            thread_ticks[name] = stat.cpu_ticks
        point = Counters(now, {d: disks[d] for d in wanted if d in disks}, thread_ticks)
        points = state.points
        if points and now < points[-1].ts:
            points.clear()  # the clock stepped back (NTP, a restored VM): rates start again
        points.append(point)
        while len(points) > 2 and points[1].ts <= now - self.window_s:
            points.popleft()
        base = points[0]
        span = now - base.ts
        observed: tuple[MemberIo, ...] = ()
        threads_cpu: dict[str, float] = {}
        array_kib: tuple[float | None, float | None] = (None, None)
        others: dict[str, float] = {}
        if span > 0 and base is not point:
            observed = tuple(
                io
                for m in members
                if (io := member_io(m, self._whole_disk(m) or m, base, point, span)) is not None
            )
            threads_cpu = {
                name: (ticks - base.thread_ticks[name]) / CLOCK_TICKS / span
                for name, ticks in thread_ticks.items()
                if name in base.thread_ticks
            }
            for m in members:
                disk = self._whole_disk(m)
                if disk is not None and disk != m:
                    other = kib_s(base, point, disk, span) - kib_s(base, point, m, span)
                    if m in point.disks:  # a partition diskstats lists: else unknown
                        others[disk] = max(other, 0.0)
            if array.name in base.disks and array.name in point.disks:
                before, after = base.disks[array.name], point.disks[array.name]
                array_kib = (
                    (after.sectors_read - before.sectors_read) * SECTOR_KIB / span,
                    (after.sectors_written - before.sectors_written) * SECTOR_KIB / span,
                )
        low, high = limits
        speed = sysfs.sync_speed_kb_s if sysfs is not None else None
        if speed is None and array.sync is not None:
            speed = array.sync.speed_kb_s
        return Observation(
            now=now,
            array=array.name,
            level=array.level,
            action=array.sync.action if array.sync is not None else "",
            speed_kb_s=speed,
            min_kb_s=low.kb_s if low is not None else None,
            max_kb_s=high.kb_s if high is not None else None,
            max_local=high is not None and high.source == "local",
            stripe_cache_size=sysfs.stripe_cache_size if sysfs is not None else None,
            stripe_cache_active=sysfs.stripe_cache_active if sysfs is not None else None,
            group_thread_cnt=self._group_thread_cnt(array.name, state),
            members=observed,
            threads_cpu=threads_cpu,
            array_read_kib_s=array_kib[0],
            array_write_kib_s=array_kib[1],
            other_partitions_kib_s=others,
            mem_available_kib=memory,
            window_s=span if span > 0 else None,
            top_io=self.io_scan.busiest(),
        )

    def _state(self, array: str) -> _ArrayState:
        state = self.arrays.get(array)
        if state is None:
            state = self.arrays[array] = _ArrayState(Hysteresis(self.hold_s))
        return state

    def _devices(self, array: mdstat.Array) -> tuple[list[str], set[str]]:
        """The members md syncs (not spares, not faulty) and every device to read: the whole
        disks for busy and wait, the member partitions to tell other partitions' I/O apart,
        and the md device, whose own I/O is its users'."""
        members = [d.name for d in array.devices if not {"S", "F"} & set(d.flags)]
        return members, {array.name, *members, *(self._whole_disk(m) or m for m in members)}

    def _group_thread_cnt(self, array: str, state: _ArrayState) -> int | None:
        """Read once per run: tuning never changes it while the array syncs (it is not
        safe_while_syncing in the catalogue)."""
        if not state.group_thread_cnt_read:
            raw = self.host.read(self.host.md_attr_path(array, "group_thread_cnt"))
            state.group_thread_cnt = parse_int(raw)
            state.group_thread_cnt_read = True
        return state.group_thread_cnt

    def devices(self, parsed: mdstat.MdStat) -> set[str]:
        """The devices whose /proc/diskstats lines the next tick() needs (none while no array
        syncs)."""
        return {device for array in _running(parsed) for device in self._devices(array)[1]}

    def _mem_available(self, now: float, available_kib: int | None) -> int | None:
        """MemAvailable in KiB, taken once per window: only the stripe-cache advice uses it."""
        if self.memory is None or now - self.memory[0] >= self.window_s or now < self.memory[0]:
            self.memory = (now, available_kib)
        return self.memory[1]

    def _whole_disk(self, member: str) -> str | None:
        if member not in self.whole_disks:
            try:
                self.whole_disks[member] = self.host.whole_disk(member)
            except ValueError:  # a name host.py will not build a path from
                self.whole_disks[member] = None
        return self.whole_disks[member]

    # ---- processes
    def _find_threads(self, now: float, running: list[mdstat.Array]) -> None:
        """List /proc for md threads when a running array has none known (a run just started, or
        its sync thread ended and another began), at most once per THREAD_SCAN_S."""
        states = {a.name: self._state(a.name) for a in running}
        missing = [s for s in states.values() if not s.threads or s.lost_thread]
        if not missing or now - self.last_thread_scan < THREAD_SCAN_S:
            return
        self.last_thread_scan = now
        for state in missing:
            state.lost_thread = False
        for pid in self.host.pids():
            comm = self.host.read_pid_comm(pid)
            owner = states.get(comm.split("_", 1)[0]) if comm and MD_THREAD.match(comm) else None
            if comm is not None and owner is not None:
                owner.threads[comm] = pid


def _tuned(
    limits: EffectiveLimits, sysfs: ArraySysfs | None
) -> tuple[int | None, int | None, int | None]:
    """What tuning changes that the verdicts read: the limits in force and the stripe cache."""
    low, high = limits
    return (
        low.kb_s if low is not None else None,
        high.kb_s if high is not None else None,
        sysfs.stripe_cache_size if sysfs is not None else None,
    )


def _running(parsed: mdstat.MdStat) -> list[mdstat.Array]:
    """The md arrays whose sync runs: the ones diagnosed."""
    return [a for a in parsed.arrays if a.syncing and ARRAY_NAME.fullmatch(a.name)]
