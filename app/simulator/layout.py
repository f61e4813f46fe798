"""What the simulated box is: its disks and arrays, the DSM-like knob values found on it, the
seeds' speed model, and the state saved between restarts."""

import itertools
import math
from dataclasses import dataclass, field

DISKS = ("sda", "sdb", "sdc", "sdd")
PER_DEVICE_BLOCKS = 1_953_494_784  # 1 KiB blocks in each md2 member partition (2 TB)
OLD_DATA_DISKS, NEW_DATA_DISKS = 2, 3  # raid5 3 -> 4 disks
RESHAPE_TOTAL_BLOCKS = PER_DEVICE_BLOCKS * OLD_DATA_DISKS
MD3_DISKS = ("sda", "sdb", "sdd")  # the larger disks: md3's raid1 pair, then the new disk
MD3_PER_DEVICE_BLOCKS = 976_758_848  # 1 KiB blocks in each md3 member partition (1 TB)
MD3_RESHAPE_BLOCKS = MD3_PER_DEVICE_BLOCKS  # raid5 2 -> 3 disks: one old data disk
MD0_BLOCKS, MD1_BLOCKS = 2_490_176, 2_097_088  # DSM's system and swap raid1s, on every disk
# Each disk's whole size (/sys/block/<disk>/size, 512-byte sectors): its partitions plus 0.5 GB
# of DSM's gaps; sda, sdb and sdd carry md3 too.
DISK_SECTORS = {
    d: 2 * (MD0_BLOCKS + MD1_BLOCKS + PER_DEVICE_BLOCKS + 524_288)
    + (2 * MD3_PER_DEVICE_BLOCKS if d in MD3_DISKS else 0)
    for d in DISKS
}
# /sys/block/<disk>/device/model as libata pads it (16 characters): two WD Reds of 3 TB, the
# 2 TB one md3 does not use, and the new IronWolf.
DISK_MODELS = {
    "sda": "WDC WD30EFRX-68E",
    "sdb": "WDC WD30EFRX-68E",
    "sdc": "WDC WD20EFRX-68E",
    "sdd": "ST3000VN007-2E41",
}
NEW_READ_AHEAD_KB = 2 * 64 * NEW_DATA_DISKS  # md: two stripes once the grow is done
MD3_READ_AHEAD_KB = 2 * 64 * 2  # ... of md3's 3-disk raid5
STEP_S = 3.0  # md.c takes a progress mark every 3 s and averages the last 10
MARKS = 10

# Reshape speed in MB/s by stripe_cache_size (seeds: 256 -> 6, 4096 -> 4x, 16384 best, 32768 worse).
CACHE_SPEED_MB_S = ((17, 2.5), (256, 6.0), (1024, 12.0), (4096, 24.0), (16384, 30.0), (32768, 27.5))
COMPETING_SHARE = 0.8  # while other I/O runs, the sync gets at most this share of the disks
KNEE_SPEEDUP = 5.0  # after the knee everything is read: the tail only writes
# What the disks show. At its stripe-cache capacity the reshape keeps every member busy (small
# caches mean small requests: the disks' I/O count binds).
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
    # Simulated seconds between md2's end and md3's start (DSM starts the next array of an
    # expansion a few seconds after the last ends), and when md2's grow ended.
    phase_gap_s: float = 0.0
    phase_ended: float | None = None
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
