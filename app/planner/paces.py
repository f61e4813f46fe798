"""How fast this box's disks sync, reshape and boost, from its own history when it has any, and
how sure that makes a plan (pure: the web's join reads the history and hands the figures in).

Every pace counts per member disk, as md does: a sync's (done/total) and speed= are per device,
and so are a reshape's, on the new layout (raid5.c sets resync_max_sectors to dev_sectors;
tests/fixtures/kernel/raid5-reshape: total 260096 of a 520192-block 3-disk raid5). A measured grow
whose total differs (the simulator counts the old array's data) is scaled to its member size by
the join, so its pace is the member's share per second whatever md counted.
"""

import time
from dataclasses import dataclass, replace
from typing import Literal

Source = Literal["measured", "physics", "assumed"]

# Without any sync measured here: a 7200 rpm NAS disk streams ~150 MB/s averaged over its
# tracks; 5400 rpm ones ~100, the fastest ~250. Said as an assumption wherever it is used.
ASSUMED_DISK_KIB_S = 150e6 / 1024
ASSUMED_RANGE = (0.6, 1.6)
# A grow before its knee (each member's /proc/diskstats through 3 -> 4 and 4 -> 5 grows,
# tests/realkernel/guest/plan_scenario.py): each member reads the old layout and writes the new
# one, (new/old data disks) KiB read and 1 written a KiB of progress, alternating between two
# places on the disk. On a rotating disk every request then costs a seek, so the pace follows
# the disk's request rate and the bytes each request carries, not its streaming pace: on 6.1
# the members served 110-141 requests/s while a check of the same disks streamed 706 KiB
# requests. A 7200 rpm disk serves ~120 short-seek requests/s (8 ms each: a short seek plus half
# a turn); 5400 rpm ones ~80, the fastest ~160.
SEEK_REQUESTS_S, SEEK_RANGE = 120.0, (80.0 / 120, 160.0 / 120)


@dataclass(frozen=True)
class KernelGrow:
    """What a RAID4/5/6 grow does on one kernel generation: before its knee, what it moves per
    request its member disk serves, read and written (KiB, at 64 KiB chunks: how far the block
    layer merges md's stripe reads and writes is the generation's own); past it, its pace in
    multiples of the check's (md only writes there, in requests whose size is the kernel's too)."""

    read_kib: float  # likely
    write_kib: float
    smallest: tuple[float, float]  # (read, write) of the runs whose requests were the smallest
    largest: tuple[float, float]  # ... the largest
    after_knee: tuple[float, float, float]  # x the check's pace: likely, slowest, fastest
    measured: str  # what the figures rest on


# Measured at 64 KiB chunks on QEMU's HDD-like throttle (120 requests/s a disk), 3 -> 4 and
# 4 -> 5 grows (docs/performance.md, "The change planner"): the KiB each read and write request
# carried, times the share of the throttle's rate the grow used. That share is about 1 on 6.1
# (the grow is request-bound: reads of 69-143 KiB, writes of 49-69 KiB, the smallest on the
# quietest host); 6.12's small requests (20-26 KiB, ~450 a second) are merged by
# the virtual disk before its throttle, as a disk's own queue merges adjacent ones; 5.10's large
# ones (440-500 KiB reads, 350-430 KiB writes) came at 57-95 a second, md's raid5 thread being
# the bound under emulation. How far a generation merges varied from boot to boot (with the
# emulated CPU's speed and the host's load), so the likely figure sits in the middle of its
# 3 -> 4 grows, and the smallest and largest of all its grows bound the range. Past the knee
# 5.10 and 6.1 ran 1.1-2.1x the check's pace, 6.12 (writes of 7 KiB) 0.2-0.6x.
KERNEL_GROWS: dict[str, KernelGrow] = {
    "5.10": KernelGrow(
        358.0, 268.0, (214.0, 194.0), (381.0, 277.0), (1.3, 0.8, 2.5), "Linux 5.10.0-32"
    ),
    "6.1": KernelGrow(105.0, 59.0, (74.0, 53.0), (155.0, 69.0), (1.3, 0.6, 2.0), "Linux 6.1.0-56"),
    "6.12": KernelGrow(95.0, 97.0, (71.0, 72.0), (97.0, 104.0), (0.5, 0.2, 0.7), "Linux 6.12.117"),
}
# A kernel without its own figures: 6.1's likely ones (the generation between the two others),
# within the extremes of every measured one.
UNMEASURED_GROW = KernelGrow(
    KERNEL_GROWS["6.1"].read_kib,
    KERNEL_GROWS["6.1"].write_kib,
    (
        min(k.smallest[0] for k in KERNEL_GROWS.values()),
        min(k.smallest[1] for k in KERNEL_GROWS.values()),
    ),
    (
        max(k.largest[0] for k in KERNEL_GROWS.values()),
        max(k.largest[1] for k in KERNEL_GROWS.values()),
    ),
    (
        KERNEL_GROWS["6.1"].after_knee[0],
        min(k.after_knee[1] for k in KERNEL_GROWS.values()),
        max(k.after_knee[2] for k in KERNEL_GROWS.values()),
    ),
    "this kernel not measured: 6.1's, within every measured kernel's",
)
# Linux merges no request past a disk's max_sectors_kb (1280 KiB by default): the cap when a
# larger chunk scales the figures above.
MAX_REQUEST_KIB = 1280.0
DEFAULT_CHUNK_KIB = 64  # DSM's chunk; a raid1 has none and DSM's conversion to raid5 uses this
# A measured pace is good to this much, widened as it ages or covers little of the work ahead.
MEASURED_SPREAD = 0.15
AGE_SPREAD_PER_30_DAYS, AGE_SPREAD_MAX = 0.10, 0.45
THIN_SHARE, THIN_SPREAD = 0.05, 0.20  # a run that covered under 5 % of the work planned
DAY_S = 86400.0


@dataclass(frozen=True)
class MeasuredPace:
    """A pace this box showed, and what it rests on."""

    kib_s: float  # per member disk
    what: str  # "the check of md2"
    when: float  # unix seconds it ended (or now, for the run going on)
    covered_kib: int  # the work it covered, 1 KiB blocks (per disk for a sync)
    held_by_max: bool = False  # md held it at its max limit: the disks could do more


@dataclass(frozen=True)
class Boost:
    """What boost does to a pace: measured here (speed with / without), or the model's guess."""

    ratio: float
    low: float  # the slowest it may do
    high: float  # the fastest
    source: Source
    why: str


@dataclass(frozen=True)
class History:
    """Everything the plan takes from this box's past: paces, boost's effect, the max limit."""

    sync: MeasuredPace | None = None  # the newest check, resync or recovery that completed
    grow_before: MeasuredPace | None = None  # the newest grow's pace before its knee
    grow_after: MeasuredPace | None = None  # ... and after it
    boost_sync: Boost = Boost(1.0, 1.0, 1.2, "physics", "a disk-bound sync gains little")
    boost_grow: Boost = Boost(1.4, 1.0, 2.0, "physics", "a larger stripe cache, on HDDs")
    # How much faster a disk-bound grow runs past its knee (ratio, low, high), for a grow
    # measured only before it; None: from the sync pace instead.
    knee_speedup: tuple[float, float, float] | None = None
    rotational: bool | None = None  # the pool's disks spin (sysfs queue/rotational); None: unknown
    kernel: str | None = None  # the box's kernel generation ("6.1"); None: unknown
    speed_max_kib_s: float | None = None  # md's effective max now: no pace passes it
    boost_max_kib_s: float | None = None  # ... with boost applied


@dataclass(frozen=True)
class Geometry:
    """What a grow's requests look like: data disks before and after, and the chunk."""

    old_data: int
    new_data: int
    chunk_kib: int | None = None  # None: DEFAULT_CHUNK_KIB

    @property
    def moved(self) -> float:
        """What a member reads and writes before the knee, per unit of progress."""
        return self.read + 1

    @property
    def read(self) -> float:
        """What a member reads before the knee, per unit of progress."""
        return self.new_data / self.old_data

    def requests_per_kib(self, read_kib: float, write_kib: float) -> float:
        """A member's requests per KiB of progress before the knee, for requests of these sizes
        at 64 KiB chunks (a larger chunk merges into larger requests, up to the disk's cap)."""
        scale = (self.chunk_kib or DEFAULT_CHUNK_KIB) / DEFAULT_CHUNK_KIB
        read = min(read_kib * scale, MAX_REQUEST_KIB)
        write = min(write_kib * scale, MAX_REQUEST_KIB)
        return self.new_data / self.old_data / read + 1 / write


@dataclass(frozen=True)
class Pace:
    kib_s: float
    low_kib_s: float  # the slow end of the range
    high_kib_s: float  # the fast end
    source: Source
    why: str  # "from the check of md2 on 1 Nov: 152 MB/s a disk"


def spread(measured: MeasuredPace, work_kib: float, now: float) -> float:
    """How far a measured pace may be off for this work: wider when old or thin."""
    age_days = max(now - measured.when, 0.0) / DAY_S
    out = MEASURED_SPREAD + min(AGE_SPREAD_PER_30_DAYS * age_days / 30, AGE_SPREAD_MAX)
    if measured.covered_kib < THIN_SHARE * work_kib:
        out += THIN_SPREAD
    return out


def from_measured(measured: MeasuredPace, work_kib: float, now: float, unit: str) -> Pace:
    s = spread(measured, work_kib, now)
    why = f"from {measured.what} on {_day(measured.when)}: {_mb_s(measured.kib_s)} {unit}"
    return Pace(measured.kib_s, measured.kib_s / (1 + s), measured.kib_s * (1 + s), "measured", why)


def sync_pace(history: History, work_kib: float, now: float) -> Pace:
    """A member's rebuild or a new array's first sync: the pace of this box's last sync."""
    measured = history.sync
    if measured is not None and not measured.held_by_max:
        return from_measured(measured, work_kib, now, "a disk")
    low, high = ASSUMED_RANGE
    kib = ASSUMED_DISK_KIB_S
    why = f"no sync measured on this box yet: assumed {_mb_s(kib)} a disk (a 7200 rpm HDD)"
    if measured is not None:
        # Its pace says what the limit allowed, not what the disks do: at least that much.
        kib = max(kib, measured.kib_s)
        why = (
            f"{measured.what} on {_day(measured.when)} ran at its max speed limit "
            f"({_mb_s(measured.kib_s)}), so the disks can do more: assumed {_mb_s(kib)} a disk"
        )
    return Pace(kib, kib * low, kib * high, "assumed", why)


def grow_paces(
    history: History, work_kib: float, now: float, geometry: Geometry | None = None
) -> tuple[Pace, Pace]:
    """A grow's pace before and after its knee: measured on a past grow here (after the knee:
    the pace before it times md's knee speed-up when only that part was seen), else md's
    physics: before the knee the disks' request rate (rotating disks) or streaming pace bounds
    it, after it md only writes whole stripes, in order, at the kernel's multiple of the check's
    pace."""
    base = sync_pace(history, work_kib, now)
    source: Source = "physics" if base.source == "measured" else "assumed"
    kernel = kernel_grow(history.kernel)
    before = _before_knee(base, source, history.rotational, geometry or Geometry(2, 3), kernel)
    share, low, high = kernel.after_knee
    why = f"md only writes, at ~{share:.1f}x a sync's pace on this kernel: {base.why}"
    after = Pace(base.kib_s * share, base.low_kib_s * low, base.high_kib_s * high, source, why)
    if history.grow_before is not None:
        before = from_measured(history.grow_before, work_kib, now, "before the knee")
        if history.grow_after is None and history.knee_speedup is not None:
            ratio, low, high = history.knee_speedup
            why = f"x{ratio:.0f} the pace before it (md only writes past the knee), {before.why}"
            after = Pace(
                before.kib_s * ratio, before.low_kib_s * low, before.high_kib_s * high,
                "physics", why,
            )  # fmt: skip
    if history.grow_after is not None:
        after = from_measured(history.grow_after, work_kib, now, "after the knee")
    return before, after


def kernel_grow(kernel: str | None) -> KernelGrow:
    """What a grow does on this kernel generation."""
    if kernel in KERNEL_GROWS:
        return KERNEL_GROWS[kernel]
    said = f"Linux {kernel} not measured" if kernel else "the kernel unknown"
    return replace(UNMEASURED_GROW, measured=f"{said}: 6.1's, within every measured kernel's")


def _before_knee(
    base: Pace, source: Source, rotational: bool | None, geometry: Geometry, requests: KernelGrow
) -> Pace:
    """On SSDs the streaming bound: a member moves `geometry.moved` times the progress. On
    rotating disks (or unknown ones: a NAS's are) the seek bound, the disk's request rate times
    what each request carries on this kernel, which counts the writes and the head's travel
    between the layouts; and the check's pace bounds the reading (md read each member once a
    unit of progress there, as fast as the disks or md's own thread went: under emulation 5.10's
    check ran 23 MB/s, held by md's thread, and its grow read at about that pace)."""
    if rotational is False:
        moved = geometry.moved
        why = f"the disks' streaming pace over {moved:.1f} (read the old layout, write the new): "
        return Pace(
            base.kib_s / moved,
            base.low_kib_s / moved,
            base.high_kib_s / moved,
            source,
            why + base.why,
        )
    read = geometry.read
    stream = Pace(base.kib_s / read, base.low_kib_s / read, base.high_kib_s / read, source, "")
    low, high = SEEK_RANGE
    seek = SEEK_REQUESTS_S / geometry.requests_per_kib(requests.read_kib, requests.write_kib)
    slowest = SEEK_REQUESTS_S * low / geometry.requests_per_kib(*requests.smallest)
    fastest = SEEK_REQUESTS_S * high / geometry.requests_per_kib(*requests.largest)
    chunk = geometry.chunk_kib or DEFAULT_CHUNK_KIB
    why = (
        f"seek-bound on rotating disks: ~{SEEK_REQUESTS_S:.0f} requests/s a disk, each reading "
        f"~{requests.read_kib:.0f} KiB or writing ~{requests.write_kib:.0f} KiB at 64 KiB chunks "
        f"({requests.measured}; {chunk} KiB chunks here), {_mb_s(seek)}"
    )
    if stream.kib_s < seek:
        why = f"the check's pace over {read:.1f}, what it reads (below the seek bound): {base.why}"
    else:
        why += f" (the check's pace allows more: {base.why})"
    return Pace(
        min(seek, stream.kib_s),
        min(slowest, stream.low_kib_s),
        min(fastest, stream.high_kib_s),
        source,
        why,
    )


def capped(pace: Pace, limit_kib_s: float | None) -> Pace:
    """md never syncs faster than its max limit (app/forecast/physics.py measures how close)."""
    if limit_kib_s is None or pace.high_kib_s <= limit_kib_s:
        return pace
    why = pace.why
    if pace.kib_s > limit_kib_s:
        why += f"; held to the max speed limit, {_mb_s(limit_kib_s)}"
    return Pace(
        min(pace.kib_s, limit_kib_s),
        min(pace.low_kib_s, limit_kib_s),
        limit_kib_s,
        pace.source,
        why,
    )


def boosted(pace: Pace, boost: Boost, limit_kib_s: float | None) -> Pace:
    faster = Pace(
        pace.kib_s * boost.ratio,
        pace.low_kib_s * boost.low,
        pace.high_kib_s * boost.high,
        boost.source if boost.source == "measured" else pace.source,
        f"{pace.why}; boost x{boost.ratio:.1f} ({boost.why})",
    )
    return capped(faster, limit_kib_s)


def _mb_s(kib_s: float) -> str:
    return f"{kib_s * 1024 / 1e6:.0f} MB/s"


def _day(ts: float) -> str:
    return time.strftime("%-d %b %Y", time.gmtime(ts))
