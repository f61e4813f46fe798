"""A simulated Synology-like box: a /proc + /sys tree that a reshape advances, for demos and tests.

md0 (system, raid1), md1 (swap, raid1), md2 (a 4-disk raid5 growing from 3 disks), md3 (a raid1
on the two larger disks). By default the box is an SHR expansion: once md2's grow is done, md3
becomes a raid5 growing from 2 to 3 disks, as DSM reshapes a pool's arrays one after another;
`expansion=False` keeps md3 an idle raid1. A file named `freeze` in the tree stops the disks
(no progress until it is removed), for stall tests.
The reshape's speed reacts to the tunables in the tree the way real NASes reported it:
stripe_cache_size 256 -> ~6 MB/s, 4096 -> ~4x, 16384 -> ~30 MB/s, 32768
slightly worse; while simulated competing I/O runs, md holds the sync near speed_limit_min.
The disks show what holds the sync back, for "why is it slow": /proc/diskstats
counters move with the sync's own I/O and, during a burst, with a reader on one member
(synoindexd, whose /proc/PID/io says so); md's threads accumulate CPU time in /proc/PID/stat; a
small stripe cache fills up; a file named `slow` holding a disk name ("sdc") makes that member
answer ten times slower, and the array with it.
The app reads this tree through host.py exactly as it reads a real NAS; its clock is clock(),
which never runs ahead of the tree.
"""

import asyncio
import contextlib
import json
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from app.md import mdstat
from app.simulator import layout
from app.simulator.disks import count_io
from app.simulator.files import Tree, write_atomic
from app.simulator.layout import SimState, cache_speed_mb_s

# How far (simulated seconds) the tree may lag the clock: md's own speed= averages 30 s. At 3000x
# the demo's loop may not run for a second on a busy machine (50 simulated minutes); a sample
# taken then found progress frozen, and the forecast said "no progress for 11 min" (its
# STALL_S is 2 minutes) for the running array and gave the pool no finish time.
MAX_LAG_S = 30.0


class Simulator:
    """Advances the simulated box; writes mdstat and sysfs in the kernel's formats."""

    def __init__(
        self,
        root: Path,
        speedup: float = 1.0,
        seed: int = 1,
        start_percent: float = 12.0,
        expansion: bool = True,
        wall: Callable[[], float] = time.time,
        phase_gap_s: float = 0.0,
    ):
        self.root = root
        self.tree = Tree(root)
        self.wall = wall
        self.lock = threading.Lock()  # advance() runs in the demo's loop and under clock()
        self.state_file = root / "state.json"
        if self.state_file.exists():
            saved = json.loads(self.state_file.read_text())
            saved["marks"] = [tuple(m) for m in saved["marks"]]
            self.state = SimState(**saved)
        else:
            now = wall()
            done = layout.RESHAPE_TOTAL_BLOCKS * start_percent / 100
            self.state = SimState(
                now, speedup, now, done, [(now, done)], 0.0, now + 600, seed, 0, expansion
            )
            self.state.phase_gap_s = phase_gap_s
            self.tree.build()
        self.rng = random.Random(self.state.seed)  # the same seed gives the same run
        self.write_status()

    # ---- time
    def clock(self) -> float:
        """Simulated unix time, `speedup` times faster than the wall clock. The tree is first
        brought up to it when it lags by more than MAX_LAG_S, so that whoever reads the clock
        and then the kernel files finds them of the same moment, however late the loop runs."""
        now = self._wall_time()
        if now - self.state.sim_time > MAX_LAG_S:
            self.advance_to(now)
        return now

    def _wall_time(self) -> float:
        s = self.state
        return s.anchor_wall + (self.wall() - s.anchor_wall) * s.speedup

    @property
    def wall_tick_s(self) -> float:
        """How often to advance: every 10 simulated seconds, from once to ten times a wall
        second, so that a sped-up demo still shows auto-tune's steps as separate speeds."""
        return min(1.0, max(0.1, 10.0 / self.state.speedup))

    def advance_to_now(self) -> None:
        self.advance_to(self._wall_time())

    def advance_to(self, sim_time: float) -> None:
        with self.lock:
            self.advance(sim_time - self.state.sim_time)

    def advance(self, seconds: float) -> None:
        """Run the reshape for `seconds` of simulated time, then rewrite the kernel files."""
        s = self.state
        end = s.sim_time + max(seconds, 0.0)
        frozen = (self.root / "freeze").exists()
        knobs = self._knobs()  # the tree as it is now: read once per call, not once per step
        disks = self._disk_knobs()
        while s.sim_time < end and not (self.finished and not self.next_phase_coming):
            step = min(layout.STEP_S, end - s.sim_time)
            if self.finished:  # between two phases: the pool idles until DSM starts the next
                s.sim_time += step
            else:
                speed = 0.0 if frozen else self._speed_kb_s(*knobs)
                load = 0.0 if frozen else min(speed / max(self._capacity_kb_s(knobs[0]), 1.0), 1.0)
                count_io(
                    s, step, speed, load, *disks, self.members, self.competing_io, self.reshaping
                )
                s.done_blocks = min(self.total_blocks, s.done_blocks + speed * step)
                s.sim_time += step
                if s.sim_time - s.marks[-1][0] >= layout.STEP_S:
                    s.marks = [*s.marks[-layout.MARKS :], (s.sim_time, s.done_blocks)]
            self._schedule_bursts()
            if self.finished and self.next_phase_coming:
                if s.phase_ended is None:
                    s.phase_ended = s.sim_time
                    self.tree.raise_read_ahead("md2", layout.NEW_READ_AHEAD_KB)
                if s.sim_time >= s.phase_ended + s.phase_gap_s:
                    # md3's grow begins in one rewrite of the tree, as DSM starts it: with no
                    # gap, no tick ever sees the pool idle in between.
                    s.phase, s.done_blocks, s.marks = 1, 0.0, [(s.sim_time, 0.0)]
                    self.tree.become_raid5_md3()
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
        return layout.MD3_RESHAPE_BLOCKS if self.state.phase == 1 else layout.RESHAPE_TOTAL_BLOCKS

    @property
    def knee(self) -> float:
        """Old / new data disks: the progress after which the grow only writes."""
        return 1 / 2 if self.state.phase == 1 else layout.OLD_DATA_DISKS / layout.NEW_DATA_DISKS

    @property
    def next_phase_coming(self) -> bool:
        """md3's grow is still to come: md2's runs, or has ended and DSM has not begun md3 yet."""
        return self.state.expansion and self.state.phase == 0

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
        cache = self.tree.read_int(f"sys/block/{array}/md/stripe_cache_size", 256)
        capacity = cache_speed_mb_s(cache)
        if self.tree.read_int(f"sys/block/{array}/queue/read_ahead_kb", 256) >= 4096:
            capacity *= 1.05  # seeds: 192 KiB -> 32 MiB read-ahead "helped a little"
        if self.slow_disk is not None:
            capacity *= layout.SLOW_SHARE
        return (capacity, *self.simulated_limits())

    def _speed_kb_s(self, capacity: float, limit_min: int, limit_max: int) -> float:
        capacity_kb_s = self._capacity_kb_s(capacity) * self.rng.lognormvariate(0, 0.08)
        if self.competing_io:
            return min(capacity_kb_s * layout.COMPETING_SHARE, limit_min)
        return min(capacity_kb_s, limit_max)

    def _capacity_kb_s(self, capacity_mb_s: float) -> float:
        """What the disks give the reshape now, in KiB/s, before the limits."""
        if self.state.done_blocks >= self.total_blocks * self.knee:
            capacity_mb_s *= layout.KNEE_SPEEDUP
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
        return layout.MD3_DISKS if self.state.phase == 1 else layout.DISKS

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
        cache = self.tree.read_int(f"sys/block/{self.reshaping}/md/stripe_cache_size", 256)
        return min(max(cache / 16, 8.0), 256.0), self.slow_disk

    def simulated_limits(self) -> tuple[int, int]:
        """The reshaping array's min/max KiB/s: its local value when set, else the global one."""
        glob_min = self.tree.read_int("proc/sys/dev/raid/speed_limit_min", 1000)
        glob_max = self.tree.read_int("proc/sys/dev/raid/speed_limit_max", 200000)
        return (
            self.tree.local_limit(self.reshaping, "sync_speed_min", glob_min),
            self.tree.local_limit(self.reshaping, "sync_speed_max", glob_max),
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
    def write_status(self) -> None:
        """Rewrite mdstat and the read-only sysfs files for the current state, each atomically."""
        s = self.state
        self.simulated_limits()  # normalise "system" writes the way md does
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
            self.tree.raise_read_ahead(
                array, layout.NEW_READ_AHEAD_KB if array == "md2" else layout.MD3_READ_AHEAD_KB
            )
        if array == "md3":  # md2's grow is over: its files read as md leaves them
            self.tree.write_grow("md2", None, 0, 0, 0, 0)
        active = self._stripe_cache_active(array, speed) if reshaping else 0
        self.tree.write_grow(array, sync, done, total, speed, active)
        # mdstat after sysfs: a tick that sees the grow gone from mdstat finds it "none" in sysfs.
        self.tree.write_mdstat(array, sync)
        self.tree.write_idle_raid1(("md0", "md1", "md3") if array == "md2" else ("md0", "md1"))
        self.tree.write_diskstats(s.disk_counters)
        self.tree.write_processes(self._threads_alive(reshaping), s.thread_ticks, s.reader_bytes)
        write_atomic(self.state_file, json.dumps(asdict(s)))

    def _threads_alive(self, reshaping: bool) -> set[str]:
        """md's threads: each raid5's while it is one, the reshape thread only while it runs."""
        alive = {"md2_raid5"} | ({"md3_raid5"} if self.state.phase == 1 else set())
        return alive | ({f"{self.reshaping}_reshape"} if reshaping else set())

    def _stripe_cache_active(self, array: str, speed: float) -> int:
        """Entries in use: a cache below 4096 fills up at full speed; a larger one has room."""
        size = self.tree.read_int(f"sys/block/{array}/md/stripe_cache_size", 256)
        capacity = self._capacity_kb_s(self._knobs()[0])
        load = min(speed / capacity, 1.0) if capacity > 0 else 0.0
        return int(size * load * (0.98 if size < 4096 else 0.6))


async def run_forever(sim: Simulator, stop: asyncio.Event, tick_s: float = 1.0) -> None:
    """Advance the simulation to the simulated clock about once a wall second until `stop`."""
    while not stop.is_set():
        await asyncio.to_thread(sim.advance_to_now)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=tick_s)
