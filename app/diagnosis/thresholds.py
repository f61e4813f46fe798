"""Every threshold of "why is it slow?" in one table, each with the reason for its value."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Threshold:
    value: float
    unit: str
    reason: str


THRESHOLDS: dict[str, Threshold] = {
    "max_near": Threshold(
        0.90,
        "x the effective max",
        "md never syncs faster than its max; its speed is a ~30 s average that wobbles a few per "
        "cent around a limit it sits at (three real reshapes ran at 1.03-1.07x of it)",
    ),
    "min_near": Threshold(
        1.5,
        "x the effective min",
        "while other I/O touches the members md sleeps whenever it is above its min (md.c "
        "md_do_sync, is_mddev_idle); at low speeds progress arrives in jumps, so allow 50 % above",
    ),
    "other_io_kib_s": Threshold(
        512.0,
        "KiB/s on one member",
        "md counts any 64 sectors of other I/O as 'not idle'; below half a MiB/s a disk's own "
        "housekeeping (journal, atime) would make every run look contested",
    ),
    "other_io_share": Threshold(
        0.25,
        "of that member's I/O",
        "what the sync moves is only estimated from its speed: a quarter of the member's traffic "
        "beyond that estimate is more than the estimate's error",
    ),
    "sync_io_per_speed": Threshold(
        1.25,
        "KiB per member per KiB/s of sync speed",
        "a check, resync or recovery reads (or, on the new disk, writes) about the sync speed on "
        "each member; 25 % slack for md's read-ahead and metadata writes",
    ),
    "reshape_io_per_speed": Threshold(
        1.5,
        "KiB per member per KiB/s of sync speed",
        "a reshape reads the old layout and writes the new one; per member that stays under the "
        "reported speed for 3+ members, so 1.5 leaves room for the narrowest grows",
    ),
    "stripe_cache_full": Threshold(
        0.90,
        "stripe_cache_active / stripe_cache_size",
        "raid5.c makes requests wait for a free stripe when the cache is full (raid5_get_active_"
        "stripe); above 90 % in use across a minute it is the queue everything waits in",
    ),
    "slow_wait_ratio": Threshold(
        3.0,
        "x the other members' median wait",
        "members of one array get the same requests; a disk three times slower than its peers "
        "for a minute is failing, SMR rewriting, or on a slower link",
    ),
    "slow_wait_ms": Threshold(
        10.0,
        "ms per request",
        "below 10 ms per request even the slowest disk answers like a healthy HDD",
    ),
    "slow_busy": Threshold(
        0.50,
        "busy share of the slow disk",
        "a slow disk holds the array back only when it is the busiest and busy most of the time",
    ),
    "cpu_bound": Threshold(
        0.85,
        "cores used by one md thread",
        "one md thread computes all parity unless group_thread_cnt adds workers (md.rst); near a "
        "full core it cannot go faster",
    ),
    "disks_busy": Threshold(
        0.90,
        "busy share of every member",
        "iostat's %util: above 90 % a disk is almost never idle, so the disks are what binds",
    ),
    "hold_s": Threshold(
        60.0,
        "s",
        "issue 15: a verdict shows only after it held for a minute, and leaves the same way, so "
        "bursts of other I/O do not make it flap",
    ),
    "window_s": Threshold(
        30.0,
        "s",
        "rates are taken over 30 s, as md's own speed is: at low limits progress arrives in jumps "
        "and one 5 s tick sees none (DESIGN.md)",
    ),
}


def threshold(name: str) -> float:
    return THRESHOLDS[name].value
