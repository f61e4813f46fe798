"""A simulated Synology-like box: a /proc + /sys tree that a reshape advances, for demos and tests.

md0 (system, raid1), md1 (swap, raid1), md2 (a 4-disk raid5 growing from 3 disks), md3 (a raid1
on the two larger disks). By default the box is an SHR expansion: once md2's grow is done, md3
becomes a raid5 growing from 2 to 3 disks, as DSM reshapes a pool's arrays one after another;
`expansion=False` keeps md3 an idle raid1. A file named `freeze` in the tree stops the disks
(no progress until it is removed), for stall tests.
The reshape's speed reacts to the tunables in the tree the way the seeds measured
(../shared/seeds): stripe_cache_size 256 -> ~6 MB/s, 4096 -> ~4x, 16384 -> ~30 MB/s, 32768
slightly worse; while simulated competing I/O runs, md holds the sync near speed_limit_min.
The disks show what holds the sync back, for "why is it slow" (issue 15): /proc/diskstats
counters move with the sync's own I/O and, during a burst, with a reader on one member
(synoindexd, whose /proc/PID/io says so); md's threads accumulate CPU time in /proc/PID/stat; a
small stripe cache fills up; a file named `slow` holding a disk name ("sdc") makes that member
answer ten times slower, and the array with it.
The app reads this tree through host.py exactly as it reads a real NAS.
"""

import asyncio
import contextlib
import itertools
import json
import math
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from app.kernel import mdstat

DISKS = ("sda", "sdb", "sdc", "sdd")
PER_DEVICE_BLOCKS = 1_953_494_784  # 1 KiB blocks in each md2 member partition (2 TB)
OLD_DATA_DISKS, NEW_DATA_DISKS = 2, 3  # raid5 3 -> 4 disks
RESHAPE_TOTAL_BLOCKS = PER_DEVICE_BLOCKS * OLD_DATA_DISKS
MD3_DISKS = ("sda", "sdb", "sdd")  # the larger disks: md3's raid1 pair, then the new disk
MD3_PER_DEVICE_BLOCKS = 976_758_848  # 1 KiB blocks in each md3 member partition (1 TB)
MD3_RESHAPE_BLOCKS = MD3_PER_DEVICE_BLOCKS  # raid5 2 -> 3 disks: one old data disk
NEW_READ_AHEAD_KB = 2 * 64 * NEW_DATA_DISKS  # md: two stripes once the grow is done
STEP_S = 3.0  # md.c takes a progress mark every 3 s and averages the last 10
MARKS = 10

# Reshape speed in MB/s by stripe_cache_size (seeds: 256 -> 6, 4096 -> 4x, 16384 best, 32768 worse).
CACHE_SPEED_MB_S = ((17, 2.5), (256, 6.0), (1024, 12.0), (4096, 24.0), (16384, 30.0), (32768, 27.5))
COMPETING_SHARE = 0.8  # while other I/O runs, the sync gets at most this share of the disks
# What the disks show (issue 15). At its stripe-cache capacity the reshape keeps every member
# busy (small caches mean small requests: the disks' I/O count binds, DESIGN.md).
FULL_BUSY = 0.97
HDD_WAIT_MS = 8.0  # per request, queue included
SLOW_WAIT_FACTOR = 10.0  # the `slow` member: a failing or SMR disk
SLOW_SHARE = 0.3  # ... holds the whole stripe back to this share of the capacity
COMPETING_DISK = "sda"  # the burst's reader: DSM's indexer reading photos off the volume
COMPETING_READ_KB_S = 40_000.0
COMPETING_REQUEST_KIB = 128.0
READER_PID, READER_COMM = 23817, "synoindexd"
# md's kernel threads: the raid5 personality and the reshape, per array (pid, comm).
MD_THREADS = {
    "md2": ((412, "md2_raid5"), (2301, "md2_reshape")),
    "md3": ((413, "md3_raid5"), (2302, "md3_reshape")),
}
CLOCK_TICKS = 100  # USER_HZ: /proc/PID/stat counts CPU time in 1/100 s

KNOB_DEFAULTS = {  # DSM-like values found on a box before anyone tuned it
    "proc/sys/dev/raid/speed_limit_min": "10000",
    "proc/sys/dev/raid/speed_limit_max": "200000",
    "sys/block/md2/md/stripe_cache_size": "256",
    "sys/block/md2/md/group_thread_cnt": "0",
    # md's own: two stripes of the 3-disk geometry (2 x 64 KiB x 2 data disks); raised at the end.
    "sys/block/md2/queue/read_ahead_kb": "256",
}


@dataclass
class SimState:
    """Everything needed to continue after a restart; saved as state.json in the tree."""

    anchor_wall: float  # wall-clock time the simulation started
    speedup: float  # simulated seconds per wall second
    sim_time: float  # simulated unix time reached
    done_blocks: float  # reshape progress, 1 KiB blocks
    marks: list[tuple[float, float]]  # (sim time, done) every STEP_S, newest last
    burst_until: float  # simulated competing I/O runs until this time
    next_burst: float  # ... and starts again at this time
    seed: int
    phase: int = 0  # index into the expansion's arrays: the one reshaping now
    expansion: bool = True  # md3 reshapes after md2
    # /proc counters since "boot": per disk [reads, sectors read, ms reading, writes, sectors
    # written, ms writing, ms busy]; md thread CPU ticks by pid; the reader's bytes read.
    disk_counters: dict[str, list[float]] = field(default_factory=dict)
    thread_ticks: dict[str, float] = field(default_factory=dict)
    reader_bytes: float = 0.0


def cache_speed_mb_s(stripe_cache_size: int) -> float:
    """Capacity by stripe cache, interpolated on a log scale between the measured points."""
    points = CACHE_SPEED_MB_S
    size = min(max(stripe_cache_size, points[0][0]), points[-1][0])
    for (x0, y0), (x1, y1) in itertools.pairwise(points):
        if x0 <= size <= x1:
            f = (math.log(size) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + f * (y1 - y0)
    return points[-1][1]


class Simulator:
    """Advances the simulated box; writes mdstat and sysfs in the kernel's formats."""

    def __init__(
        self,
        root: Path,
        speedup: float = 1.0,
        seed: int = 1,
        start_percent: float = 12.0,
        expansion: bool = True,
    ):
        self.root = root
        self.state_file = root / "state.json"
        if self.state_file.exists():
            saved = json.loads(self.state_file.read_text())
            saved["marks"] = [tuple(m) for m in saved["marks"]]
            self.state = SimState(**saved)
        else:
            now = time.time()
            done = RESHAPE_TOTAL_BLOCKS * start_percent / 100
            self.state = SimState(
                now, speedup, now, done, [(now, done)], 0.0, now + 600, seed, 0, expansion
            )
            self._build_tree()
        self.rng = random.Random(self.state.seed)  # the same seed gives the same run
        self.write_status()

    # ---- time
    def clock(self) -> float:
        """Simulated unix time: runs `speedup` times faster than the wall clock."""
        s = self.state
        return s.anchor_wall + (time.time() - s.anchor_wall) * s.speedup

    @property
    def wall_tick_s(self) -> float:
        """How often to advance: every 10 simulated seconds, from once to ten times a wall
        second, so that a sped-up demo still shows auto-tune's steps as separate speeds."""
        return min(1.0, max(0.1, 10.0 / self.state.speedup))

    def advance_to_now(self) -> None:
        self.advance(self.clock() - self.state.sim_time)

    def advance(self, seconds: float) -> None:
        """Run the reshape for `seconds` of simulated time, then rewrite the kernel files."""
        s = self.state
        end = s.sim_time + max(seconds, 0.0)
        frozen = (self.root / "freeze").exists()
        knobs = self._knobs()  # the tree as it is now: read once per call, not once per step
        disks = self._disk_knobs()
        while s.sim_time < end and not self.finished:
            step = min(STEP_S, end - s.sim_time)
            speed = 0.0 if frozen else self._speed_kb_s(*knobs)
            self._count_io(speed, step, knobs[0], frozen, *disks)
            s.done_blocks = min(self.total_blocks, s.done_blocks + speed * step)
            s.sim_time += step
            if s.sim_time - s.marks[-1][0] >= STEP_S:
                s.marks = [*s.marks[-MARKS:], (s.sim_time, s.done_blocks)]
            self._schedule_bursts()
            if s.done_blocks >= self.total_blocks and s.expansion and s.phase == 0:
                # md2's grow ends and md3's begins in the same rewrite of the tree, as DSM
                # starts the next array at once: no tick ever sees the pool idle in between.
                self._raise_read_ahead("md2", NEW_READ_AHEAD_KB)
                s.phase, s.done_blocks, s.marks = 1, 0.0, [(s.sim_time, 0.0)]
                self._become_raid5_md3()
                knobs, disks = self._knobs(), self._disk_knobs()
        s.sim_time = max(s.sim_time, end)
        self.write_status()

    def freeze(self, frozen: bool = True) -> None:
        """Stop (or restart) the simulated disks: a stall, as when a member stops answering."""
        flag = self.root / "freeze"
        if frozen:
            flag.touch()
        else:
            flag.unlink(missing_ok=True)

    # ---- the model
    @property
    def reshaping(self) -> str:
        """The array whose grow runs (or ran last)."""
        return "md3" if self.state.phase == 1 else "md2"

    @property
    def total_blocks(self) -> int:
        return MD3_RESHAPE_BLOCKS if self.state.phase == 1 else RESHAPE_TOTAL_BLOCKS

    @property
    def knee(self) -> float:
        """Old / new data disks: the progress after which the grow only writes."""
        return 1 / 2 if self.state.phase == 1 else OLD_DATA_DISKS / NEW_DATA_DISKS

    @property
    def finished(self) -> bool:
        return self.state.done_blocks >= self.total_blocks

    @property
    def competing_io(self) -> bool:
        return self.state.sim_time < self.state.burst_until

    def speed_kb_s(self) -> float:
        """Instantaneous reshape speed from the tunables as they are in the tree now."""
        return self._speed_kb_s(*self._knobs())

    def _knobs(self) -> tuple[float, int, int]:
        """The reshaping array's capacity in MB/s from its tunables, and its min/max limits."""
        array = self.reshaping
        capacity = cache_speed_mb_s(self._knob_int(f"sys/block/{array}/md/stripe_cache_size", 256))
        if self._knob_int(f"sys/block/{array}/queue/read_ahead_kb", 256) >= 4096:
            capacity *= 1.05  # seeds: 192 KiB -> 32 MiB read-ahead "helped a little"
        if self.slow_disk is not None:
            capacity *= SLOW_SHARE
        return (capacity, *self.effective_limits())

    def _speed_kb_s(self, capacity: float, limit_min: int, limit_max: int) -> float:
        capacity_kb_s = self._capacity_kb_s(capacity) * self.rng.lognormvariate(0, 0.08)
        if self.competing_io:
            return min(capacity_kb_s * COMPETING_SHARE, limit_min)
        return min(capacity_kb_s, limit_max)

    def _capacity_kb_s(self, capacity_mb_s: float) -> float:
        """What the disks give the reshape now, in KiB/s, before the limits."""
        if self.state.done_blocks >= self.total_blocks * self.knee:
            capacity_mb_s *= 3.0  # after the knee everything is read: the tail only writes
        return capacity_mb_s * 1000 * 1000 / 1024

    @property
    def slow_disk(self) -> str | None:
        """The member named in the tree's `slow` file, if it is one of the reshaping array's."""
        try:
            name = (self.root / "slow").read_text().strip()
        except OSError:
            return None
        return name if name in self.members else None

    @property
    def members(self) -> tuple[str, ...]:
        return MD3_DISKS if self.state.phase == 1 else DISKS

    def slow(self, disk: str | None) -> None:
        """Make one member answer ten times slower (None: all healthy again)."""
        flag = self.root / "slow"
        if disk is None:
            flag.unlink(missing_ok=True)
        else:
            flag.write_text(disk + "\n")

    def _disk_knobs(self) -> tuple[float, str | None]:
        """The sync's request size in KiB (a bigger stripe cache makes larger requests) and
        the slow member, read once per advance()."""
        cache = self._knob_int(f"sys/block/{self.reshaping}/md/stripe_cache_size", 256)
        return min(max(cache / 16, 8.0), 256.0), self.slow_disk

    def _count_io(
        self,
        speed: float,
        step: float,
        capacity_mb_s: float,
        frozen: bool,
        request_kib: float,
        slow: str | None,
    ) -> None:
        """Advance the /proc counters by one step of the reshape at `speed` KiB/s."""
        s = self.state
        load = 0.0 if frozen else min(speed / max(self._capacity_kb_s(capacity_mb_s), 1.0), 1.0)
        for disk in DISKS:
            counters = s.disk_counters.setdefault(disk, [0.0] * 7)
            syncing = disk in self.members and not self.finished
            kib = speed * step if syncing else 0.0
            busy = FULL_BUSY * load if syncing else 0.01
            wait = HDD_WAIT_MS
            if slow is not None and syncing:
                busy, wait = (0.99, wait * SLOW_WAIT_FACTOR) if disk == slow else (busy * 0.4, wait)
            reads = writes = kib / 2 / request_kib
            other = (
                COMPETING_READ_KB_S * step if self.competing_io and disk == COMPETING_DISK else 0.0
            )
            if other:
                reads += other / COMPETING_REQUEST_KIB
                busy = max(busy, 0.92)
            for i, add in enumerate(
                (reads, (kib / 2 + other) * 2, reads * wait, writes, kib, writes * wait)
            ):
                counters[i] += add
            counters[6] += busy * 1000 * step
        if self.competing_io:
            s.reader_bytes += COMPETING_READ_KB_S * 1024 * step
            md2 = s.disk_counters.setdefault("md2", [0.0] * 7)
            md2[0] += COMPETING_READ_KB_S * step / COMPETING_REQUEST_KIB
            md2[1] += COMPETING_READ_KB_S * step * 2
        cores = {"raid5": 0.05 + 0.3 * speed / 30_000, "reshape": 0.02}
        for pid, comm in MD_THREADS[self.reshaping]:
            ticks = cores[comm.split("_")[1]] * CLOCK_TICKS * step
            s.thread_ticks[str(pid)] = s.thread_ticks.get(str(pid), 0.0) + ticks

    def effective_limits(self) -> tuple[int, int]:
        """The reshaping array's min/max KiB/s: its local value when set, else the global one."""
        glob_min = self._knob_int("proc/sys/dev/raid/speed_limit_min", 1000)
        glob_max = self._knob_int("proc/sys/dev/raid/speed_limit_max", 200000)
        return (
            self._local_limit("sync_speed_min", glob_min),
            self._local_limit("sync_speed_max", glob_max),
        )

    def _schedule_bursts(self) -> None:
        s = self.state
        if s.sim_time >= s.next_burst:
            s.burst_until = s.sim_time + self.rng.uniform(180, 900)
            s.next_burst = s.burst_until + self.rng.uniform(600, 3600)

    def window_speed_kb_s(self) -> float:
        """The kernel's speed=: progress over the last ~30 s of marks."""
        (t0, d0), (t1, d1) = self.state.marks[0], self.state.marks[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 else 0.0

    # ---- the tree
    def _path(self, relative: str) -> Path:
        return self.root / relative

    def _knob_int(self, relative: str, default: int) -> int:
        try:
            return int(self._path(relative).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return default

    def _local_limit(self, attr: str, global_value: int) -> int:
        """Mimic md: writing "system" returns to the global value, read back as "N (system)"."""
        path = self._path(f"sys/block/{self.reshaping}/md/{attr}")
        try:
            words = path.read_text().split()
        except OSError:
            return global_value
        if not words:
            return global_value
        if words[0] == "system" or words[-1] == "(system)" or words[0] == "0":
            if words != [str(global_value), "(system)"]:
                _write_atomic(path, f"{global_value} (system)\n")
            return global_value
        try:
            value = int(words[0])
        except ValueError:
            return global_value
        if words[1:] != ["(local)"]:
            _write_atomic(path, f"{value} (local)\n")
        return value

    def _build_tree(self) -> None:
        for relative, value in KNOB_DEFAULTS.items():
            _write_atomic(self._path(relative), value + "\n")
        for array in ("md0", "md1", "md2", "md3"):
            _write_atomic(self._path(f"sys/block/{array}/queue/read_ahead_kb"), "128\n")
        _write_atomic(self._path("sys/block/md2/queue/read_ahead_kb"), "256\n")
        for attr in ("sync_speed_min", "sync_speed_max"):
            for array in ("md0", "md1", "md2", "md3"):
                _write_atomic(self._path(f"sys/block/{array}/md/{attr}"), "system\n")
        for disk in DISKS:
            _write_atomic(self._path(f"sys/block/{disk}/queue/read_ahead_kb"), "128\n")
            _write_atomic(self._path(f"sys/block/{disk}/device/queue_depth"), "31\n")
            for part in (1, 2, 5, 6):
                (self.root / "sys/block" / disk / f"{disk}{part}").mkdir(
                    parents=True, exist_ok=True
                )
        _write_atomic(
            self._path("proc/meminfo"),
            "MemTotal:        8039084 kB\nMemFree:          402512 kB\n"
            "MemAvailable:    6283124 kB\nBuffers:          112344 kB\n"
            "Cached:          5210332 kB\n",
        )
        # raid1 arrays have no stripe_cache_size or group_thread_cnt: absent, as on a real kernel.
        for array in ("md0", "md1", "md3"):
            _write_atomic(self._path(f"sys/block/{array}/md/mismatch_cnt"), "0\n")

    def _raise_read_ahead(self, array: str, kb: int) -> None:
        """md raises read-ahead to two stripes of the new geometry when a grow ends (real
        kernel, tests/realkernel: 2048 -> 3072 KiB with 512 KiB chunks)."""
        read_ahead = f"sys/block/{array}/queue/read_ahead_kb"
        if self._knob_int(read_ahead, 0) < kb:
            _write_atomic(self._path(read_ahead), f"{kb}\n")

    def _become_raid5_md3(self) -> None:
        """DSM turns md3's raid1 pair into a raid5 and grows it onto the new disk."""
        _write_atomic(self._path("sys/block/md3/md/stripe_cache_size"), "256\n")
        _write_atomic(self._path("sys/block/md3/md/group_thread_cnt"), "0\n")

    def write_status(self) -> None:
        """Rewrite mdstat and the read-only sysfs files for the current state, each atomically."""
        s = self.state
        self.effective_limits()  # normalise "system" writes the way md does
        reshaping = not self.finished
        done = int(s.done_blocks)
        total = self.total_blocks
        speed = int(self.window_speed_kb_s())
        finish = (total - done) / speed / 60 if speed > 0 else 0.0
        sync = (
            mdstat.Sync(
                action="reshape",
                percent=math.floor(done * 1000 / total) / 10,
                done_blocks=done,
                total_blocks=total,
                finish_min=math.floor(finish * 10) / 10,
                speed_kb_s=speed,
            )
            if reshaping
            else None
        )
        array = self.reshaping
        if not reshaping:
            self._raise_read_ahead(array, NEW_READ_AHEAD_KB if array == "md2" else 2 * 64 * 2)
        if array == "md3":  # md2's grow is over: its files read as md leaves them
            self._write_grow("md2", None, 0, 0, 0)
        self._write_grow(array, sync, done, total, speed)
        # mdstat after sysfs: a tick that sees the grow gone from mdstat finds it "none" in sysfs.
        _write_atomic(self._path("proc/mdstat"), mdstat.render(self.mdstat(sync)))
        for idle in ("md0", "md1", "md3") if array == "md2" else ("md0", "md1"):
            for attr, value in (("sync_action", "idle"), ("sync_completed", "none")):
                _write_atomic(self._path(f"sys/block/{idle}/md/{attr}"), value + "\n")
            _write_atomic(self._path(f"sys/block/{idle}/md/degraded"), "0\n")
            _write_atomic(self._path(f"sys/block/{idle}/md/level"), "raid1\n")
        _write_atomic(self._path("proc/diskstats"), self._diskstats())
        self._write_processes(reshaping)
        _write_atomic(self.state_file, json.dumps(asdict(s)))

    def _write_grow(
        self, array: str, sync: mdstat.Sync | None, done: int, total: int, speed: int
    ) -> None:
        """The sysfs files of a raid5 grow, while it runs (`sync`) or once it is done."""
        old_data, new_disks = (1, 3) if array == "md3" else (OLD_DATA_DISKS, len(DISKS))
        running = sync is not None
        grow = {
            "sync_action": "reshape" if running else "idle",
            "sync_completed": f"{done * 2} / {total * 2}" if running else "none",
            "sync_speed": str(speed) if running else "none",
            "reshape_position": str(done * 2 * old_data) if running else "none",
            "degraded": "0",
            "mismatch_cnt": "0",
            "raid_disks": f"{new_disks} ({new_disks - 1})" if running else str(new_disks),
            "level": "raid5",
            "stripe_cache_active": str(self._stripe_cache_active(array, speed) if running else 0),
        }
        for attr, value in grow.items():
            _write_atomic(self._path(f"sys/block/{array}/md/{attr}"), value + "\n")

    def _stripe_cache_active(self, array: str, speed: float) -> int:
        """Entries in use: a cache below 4096 fills up at full speed; a larger one has room."""
        size = self._knob_int(f"sys/block/{array}/md/stripe_cache_size", 256)
        capacity = self._capacity_kb_s(self._knobs()[0])
        load = min(speed / capacity, 1.0) if capacity > 0 else 0.0
        return int(size * load * (0.98 if size < 4096 else 0.6))

    def mdstat(self, sync: mdstat.Sync | None) -> mdstat.MdStat:
        """The arrays as mdstat shows them; `sync` is the running grow's progress."""

        def members(part: int, disks: tuple[str, ...] = DISKS) -> tuple[mdstat.Device, ...]:
            return tuple(mdstat.Device(f"{d}{part}", i, "") for i, d in enumerate(disks))

        def raid1(name: str, part: int, blocks: int, disks: tuple[str, ...]) -> mdstat.Array:
            n = len(disks)
            return mdstat.Array(
                name, "active", False, False, "raid1", None, blocks, None,
                members(part, disks), n, n, "U" * n, None, None,
            )  # fmt: skip

        md2_sync = sync if self.reshaping == "md2" else None
        md2_blocks = PER_DEVICE_BLOCKS * (OLD_DATA_DISKS if md2_sync else NEW_DATA_DISKS)
        md2 = mdstat.Array(
            "md2", "active", False, False, "raid5", "1.2", md2_blocks, 64,
            members(5), 4, 4, "UUUU", None, md2_sync,
        )  # fmt: skip
        if self.reshaping == "md3":
            md3_blocks = MD3_PER_DEVICE_BLOCKS * (1 if sync else 2)
            md3 = mdstat.Array(
                "md3", "active", False, False, "raid5", "1.2", md3_blocks, 64,
                members(6, MD3_DISKS), 3, 3, "UUU", None, sync,
            )  # fmt: skip
        else:
            md3 = raid1("md3", 6, MD3_PER_DEVICE_BLOCKS, ("sda", "sdb"))
        return mdstat.MdStat(
            personalities=("linear", "raid0", "raid1", "raid10", "raid6", "raid5", "raid4"),
            arrays=(md2, md3, raid1("md1", 2, 2_097_088, DISKS), raid1("md0", 1, 2_490_176, DISKS)),
        )

    def _diskstats(self) -> str:
        """/proc/diskstats as Linux >= 5.5 prints it (iostats.rst): the disks, then md."""
        lines = []
        devices = [(8, i * 16, d) for i, d in enumerate(DISKS)]
        devices += [(9, i, f"md{i}") for i in range(4)]
        for major, minor, name in devices:
            reads, read_sectors, read_ms, writes, written, write_ms, busy = (
                int(v) for v in self.state.disk_counters.get(name, [0.0] * 7)
            )
            lines.append(
                f"{major:4d} {minor:7d} {name} {reads} 0 {read_sectors} {read_ms} {writes} 0 "
                f"{written} {write_ms} 0 {busy} {read_ms + write_ms} 0 0 0 0 0 0"
            )
        return "\n".join(lines) + "\n"

    def _write_processes(self, reshaping: bool) -> None:
        """md's threads in /proc/PID (the reshape thread only while it runs) and the reader."""
        for array, threads in MD_THREADS.items():
            for pid, comm in threads:
                alive = comm.endswith("_raid5") and (array == "md2" or self.state.phase == 1)
                alive = alive or (reshaping and array == self.reshaping)
                if not alive:
                    shutil.rmtree(self._path(f"proc/{pid}"), ignore_errors=True)
                    continue
                ticks = int(self.state.thread_ticks.get(str(pid), 0.0))
                _write_atomic(self._path(f"proc/{pid}/comm"), comm + "\n")
                _write_atomic(
                    self._path(f"proc/{pid}/stat"),
                    f"{pid} ({comm}) S 2 0 0 0 -1 2129984 0 0 0 0 0 {ticks} 0 0 20 0 1 0 300 0 "
                    "0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0\n",
                )
        read = int(self.state.reader_bytes)
        _write_atomic(self._path(f"proc/{READER_PID}/comm"), READER_COMM + "\n")
        _write_atomic(
            self._path(f"proc/{READER_PID}/io"),
            f"rchar: {read}\nwchar: 0\nsyscr: {read // 131072}\nsyscw: 0\n"
            f"read_bytes: {read}\nwrite_bytes: 0\ncancelled_write_bytes: 0\n",
        )


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


async def run_forever(sim: Simulator, stop: asyncio.Event, tick_s: float = 1.0) -> None:
    """Advance the simulation to the simulated clock about once a wall second until `stop`."""
    while not stop.is_set():
        await asyncio.to_thread(sim.advance_to_now)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=tick_s)
