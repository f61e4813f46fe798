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
    "other_io_kib_s": Threshold(
        512.0,
        "KiB/s of I/O that is not the sync",
        "md counts any 64 sectors of other I/O as 'not idle'; below half a MiB/s a disk's own "
        "housekeeping (journal, atime) would make every run look contested",
    ),
    "other_io_share": Threshold(
        0.20,
        "of the member disks' traffic",
        "md yields to any other I/O: above its min it waits for its own requests before it issues "
        "more (md.c md_do_sync, is_mddev_idle). On the real 6.1 kernel it did not drop to the min: "
        "a reader in 12 s bursts every 30 s took a fifth to a third of the disks and slowed it",
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
        "a verdict shows only after it held for a minute, and leaves the same way, so "
        "bursts of other I/O do not make it flap",
    ),
    "window_s": Threshold(
        30.0,
        "s",
        "rates are taken over 30 s, as md's own speed is: at low limits progress arrives in jumps "
        "and one 5 s tick sees none",
    ),
}


def threshold(name: str) -> float:
    return THRESHOLDS[name].value
