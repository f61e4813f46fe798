"""What md does with its speed limits, as the forecast needs it (measured on real kernels; the
runs are in tests/fixtures/runs): the max caps every speed, a change of limits moves the speed
only in some cases, and a disk-bound RAID4/5/6 grow runs faster past its knee."""

import itertools
import math
from dataclasses import dataclass

from app.forecast.trend import zone_seconds
from app.md.mdstat import PARITY_DISKS

# md overshoots its max a little (three real reshapes held by it ran at 1.03-1.07x).
MAX_OVERSHOOT = 1.07
# ... but past a grow's knee with a large stripe cache (16384: md throttles a window at a time)
# one ran at 1.43x its max (real kernel 6.1, 512 KiB chunks): the earliest a held grow may end.
HELD_KNEE_OVERSHOOT = 1.5
# md's throttle (md_do_sync) holds the speed it sees: completed sectors over its ~30 s of marks
# (10 marks of 3 s), checked between requests. A stripe cache holds one 4 KiB page per member per
# entry in flight, unseen by it. When that is a sizeable share of the window at the max (16384
# entries = 64 MiB a member = 26 s at 2500 KiB/s; 256 entries = 0.1 s at 8000), the throttle
# holds the pace only loosely: held grows ran 1.0-1.28x their max before the knee, and past it,
# where the reshape stops waiting on its own checkpoints, the more the larger that share: over a
# 16384 cache (max 5000 to 2500), on 5.10, 6.1 and 6.12, with 64 and 512 KiB chunks alike (the
# chunk matters only where it goes with the max). Knee to finish: 1.30x and 1.32x at shares 0.44
# and 0.55, 1.61-1.78x at 0.73, 1.81-2.05x at 0.87. Expected past the knee: (1 + share / 2) x the
# max (the cache half full on average; made before the knee, this ETA misses least on the
# recorded grows, since such grows also pause at the knee and run a little under their measured
# pace before it), at most (1 + 1.25 share) x (every recorded run lies inside). Under a third
# (256-2048 entries) held grows stay within 0.94-1.3x.
STRIPE_PAGE_KIB = 4
THROTTLE_WINDOW_S = 30.0
LOOSE_SHARE = 1 / 3
LOOSE_FAST = 1.25
# The speed "sits at" a limit when within this share of it: md's 30 s average wanders below the
# max it is held by, and stays above a min it is held at.
AT_MAX = 0.85
AT_MIN = 1.15
# Grow knee: disk-bound real arrays ran 4.3-6.3x faster after it (2.6x with bursts of other I/O,
# 11x once under DSM-like limits: tests/fixtures/runs). The max limit caps both.
# Measured on 6.1 (and 5.10: 5.6x); other generations without a figure of their own get it.
KNEE_SPEEDUP = 5.0
KNEE_SPEEDUP_RANGE = (2.0, 12.0)
# ... a kernel generation's own figure: on 6.12 a disk-bound RAID6 grow ran 1.15x past its knee
# (about 4300 KiB/s either side; 6.1's RAID6 grows: 4.6x and 7.4x). One run, so the range still
# reaches 6.1's likely figure.
KNEE_BY_KERNEL: dict[str, tuple[float, tuple[float, float]]] = {"6.12": (1.2, (1.0, 5.0))}
# A raised max frees a run held by it: how much faster it goes is the disks' business. Until
# the new regime is measured, assume this much faster (capped by the new max), within a range.
FREED_SPEEDUP = 2.0
FREED_RANGE = (1.0, 4.0)
# A stripe cache change on a disk-bound raid4/5/6: 0.7x-1.4x (measured on a real kernel).
CACHE_RANGE = (0.7, 1.4)


@dataclass(frozen=True)
class Limits:
    """What md's speed answers to at one sample; None where unknown."""

    speed_min: float | None = None  # KiB/s, effective (per-array when local, else global)
    speed_max: float | None = None  # KiB/s, effective
    stripe_cache: int | None = None  # entries (raid4/5/6 only)


def kernel_generation(release: str | None) -> str | None:
    """ "5.10" of "5.10.0-32-amd64" (or of "5.10"); None when unknown."""
    if not release:
        return None
    parts = release.split(".")
    if len(parts) < 2 or not parts[0].isdigit():
        return None
    minor = "".join(itertools.takewhile(str.isdigit, parts[1]))
    return f"{parts[0]}.{minor}" if minor else None


def knee_speedup(kernel_release: str | None) -> tuple[float, tuple[float, float]]:
    """A disk-bound grow's speed-up past its knee on this kernel: likely, (slowest, fastest)."""
    return KNEE_BY_KERNEL.get(
        kernel_generation(kernel_release) or "", (KNEE_SPEEDUP, KNEE_SPEEDUP_RANGE)
    )


def grow_knee(level: str | None, raid_disks: tuple[int, int | None] | None) -> float | None:
    """Progress of a RAID4/5/6 grow's speed knee: old / new data disks; None for anything else."""
    parity = PARITY_DISKS.get(level or "")
    if parity is None or raid_disks is None or raid_disks[1] is None:
        return None
    new_data, old_data = raid_disks[0] - parity, raid_disks[1] - parity
    if old_data < 1 or new_data <= old_data:
        return None
    return old_data / new_data


def known(limits: Limits) -> bool:
    return limits.speed_max is not None


def ceiling(limits: Limits) -> float:
    """The speed md holds a sync to (KiB/s; inf when unknown). md.c's md_do_sync throttles only
    once the speed passes the min, so a min above the max wins (seen: min 10000, max 8000 ran at
    ~9800 on the real kernel)."""
    if limits.speed_max is None:
        return math.inf
    return max(limits.speed_max, limits.speed_min or 0.0)


def in_flight_share(limits: Limits) -> float:
    """The share of md's throttle window its stripe cache keeps in flight at the max (0..1; 0
    when the cache or the max is unknown)."""
    top = ceiling(limits)
    if limits.stripe_cache is None or not 0 < top < math.inf:
        return 0.0
    return min(1.0, limits.stripe_cache * STRIPE_PAGE_KIB / top / THROTTLE_WINDOW_S)


def loosely_held(limits: Limits) -> bool:
    """md's throttle cannot hold this array's pace tightly: its stripe cache keeps a sizeable
    share of the throttle's window in flight at the max (see LOOSE_SHARE)."""
    return in_flight_share(limits) >= LOOSE_SHARE


def loose_knee(limits: Limits) -> tuple[float, float]:
    """A loosely held grow past its knee, in multiples of its max: likely, fastest."""
    share = in_flight_share(limits)
    return 1.0 + share / 2, 1.0 + LOOSE_FAST * share


def held_by_max(speed: float, limits: Limits) -> bool:
    return speed >= AT_MAX * ceiling(limits)


def cap(speed: float, limits: Limits, overshoot: float = MAX_OVERSHOOT) -> float:
    return min(speed, ceiling(limits) * overshoot)


def after_change(
    speed: float, old: Limits, new: Limits
) -> tuple[float, tuple[float, float]] | None:
    """The pace a change of limits implies, with its (fast, slow) factors; None when the change
    cannot move the speed (a max lowered under the speed, raised while the speed sits at it, a
    min raised over a speed held down, lowered under one held at it, a stripe cache change on a
    disk-bound array do; nothing else)."""
    old_max, new_max = ceiling(old), ceiling(new)
    old_min, new_min = old.speed_min or 0.0, new.speed_min or 0.0
    if new_max < old_max and new_max < speed / AT_MAX:
        # Lowered under (or near) the speed: md is held at the new max.
        settle = min(speed, new_max)
        return settle, (1.0, 1.0)
    if new_max > old_max and speed >= AT_MAX * old_max:
        # Raised while held by it: faster, by what the disks allow.
        settle = min(speed * FREED_SPEEDUP, new_max)
        fast = min(speed * FREED_RANGE[1], new_max * MAX_OVERSHOOT) / settle
        return settle, (fast, min(speed * FREED_RANGE[0], new_max) / settle)
    if new_min > old_min and old_min / AT_MIN <= speed < new_min:
        # Raised over a speed held at the old min by other I/O: md pushes towards the new one.
        # (Under the old min md was not throttling at all: the disks bind, nothing changes.)
        settle = min(new_min, new_max, speed * FREED_RANGE[1])
        return settle, (1.0, speed / settle)
    if new_min < old_min and speed <= AT_MIN * old_min:
        # Lowered under a speed held at the min: md may yield more to the other I/O.
        return speed, (1.0, max(new_min, 1.0) / speed if new_min > 0 else 0.5)
    if (
        new.stripe_cache != old.stripe_cache
        and old.stripe_cache is not None
        and new.stripe_cache is not None
        and speed < AT_MAX * new_max
    ):
        settle = speed
        return settle, (CACHE_RANGE[1], CACHE_RANGE[0])
    return None


def seconds_left(
    speed: float,
    progress: float,
    knee: float | None,
    knee_speedup: float,
    limits: Limits,
    total: int,
    trend: float = 0.0,
    overshoot: float = MAX_OVERSHOOT,
) -> float:
    """Seconds from `progress` to 100 % at `speed` now (capped by the max), falling along
    `trend` towards the inner tracks, faster past the knee (up to `overshoot` x the max)."""
    speed = cap(speed, limits)
    if knee is None or progress >= knee:
        return zone_seconds(progress, 1.0, trend) * total / speed
    after = cap(speed * knee_speedup, limits, overshoot)
    return (knee - progress) * total / speed + (1.0 - knee) * total / after
