"""How fast this box's disks sync, reshape and boost, from its own history when it has any, and
how sure that makes a plan (pure: the web's join reads the history and hands the figures in).

Every pace counts per member disk, as md does: a sync's (done/total) and speed= are per device,
and so are a reshape's, on the new layout (raid5.c sets resync_max_sectors to dev_sectors;
tests/fixtures/kernel/raid5-reshape: total 260096 of a 520192-block 3-disk raid5). A measured grow
whose total differs (the simulator counts the old array's data) is scaled to its member size by
the join, so its pace is the member's share per second whatever md counted.
"""

import time
from dataclasses import dataclass
from typing import Literal

Source = Literal["measured", "physics", "assumed"]

# Without any sync measured here: a 7200 rpm NAS disk streams ~150 MB/s averaged over its
# tracks; 5400 rpm ones ~100, the fastest ~250. Said as an assumption wherever it is used.
ASSUMED_DISK_KIB_S = 150e6 / 1024
ASSUMED_RANGE = (0.6, 1.6)
# A grow against the same disks' sync pace (real kernel, HDD-like disks throttled to 60 MB/s and
# 120 IO/s: tests/fixtures/runs/real5s-{a,b}-*-disk-*). Before the knee md reads the old layout and
# writes the new one in small stripes: a 3 -> 4 grow ran at 0.14-0.31 of the same batch's check
# and resync paces (geometric mean 0.20). After it md only writes whole stripes: 0.93-1.98 there
# (the throttle counts requests, and these are large), but a real disk writes no faster than it
# streams a check: 1.0.
GROW_BEFORE_SHARE, GROW_BEFORE_RANGE = 0.20, (0.12, 0.33)
GROW_AFTER_SHARE, GROW_AFTER_RANGE = 1.00, (0.60, 2.00)
# A measured pace is good to this much, widened as it ages or covers little of the work ahead.
MEASURED_SPREAD = 0.15
AGE_SPREAD_PER_30_DAYS, AGE_SPREAD_MAX = 0.10, 0.45
THIN_SHARE, THIN_SPREAD = 0.05, 0.20  # a run that covered under 5 % of the work planned
DAY_S = 86400.0


@dataclass(frozen=True)
class Measured:
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

    sync: Measured | None = None  # the newest check, resync or recovery that completed
    grow_before: Measured | None = None  # the newest grow's pace before its knee
    grow_after: Measured | None = None  # ... and after it
    boost_sync: Boost = Boost(1.0, 1.0, 1.2, "physics", "a disk-bound sync gains little")
    boost_grow: Boost = Boost(1.4, 1.0, 2.0, "physics", "a larger stripe cache, on HDDs")
    # How much faster a disk-bound grow runs past its knee (ratio, low, high), for a grow
    # measured only before it; None: from the sync pace instead.
    knee_speedup: tuple[float, float, float] | None = None
    speed_max_kib_s: float | None = None  # md's effective max now: no pace passes it
    boost_max_kib_s: float | None = None  # ... with boost applied


@dataclass(frozen=True)
class Pace:
    kib_s: float
    low_kib_s: float  # the slow end of the range
    high_kib_s: float  # the fast end
    source: Source
    why: str  # "from the check of md2 on 1 Nov: 152 MB/s a disk"


def spread(measured: Measured, work_kib: float, now: float) -> float:
    """How far a measured pace may be off for this work: wider when old or thin."""
    age_days = max(now - measured.when, 0.0) / DAY_S
    out = MEASURED_SPREAD + min(AGE_SPREAD_PER_30_DAYS * age_days / 30, AGE_SPREAD_MAX)
    if measured.covered_kib < THIN_SHARE * work_kib:
        out += THIN_SPREAD
    return out


def from_measured(measured: Measured, work_kib: float, now: float, unit: str) -> Pace:
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


def grow_paces(history: History, work_kib: float, now: float) -> tuple[Pace, Pace]:
    """A grow's pace before and after its knee: measured on a past grow here (after the knee:
    the pace before it times md's knee speed-up when only that part was seen), else the sync
    pace scaled by what the real kernel's grows did against their disks' sync."""
    base = sync_pace(history, work_kib, now)
    source: Source = "physics" if base.source == "measured" else "assumed"
    scaled = []
    for share, (low, high), part in (
        (GROW_BEFORE_SHARE, GROW_BEFORE_RANGE, "before"),
        (GROW_AFTER_SHARE, GROW_AFTER_RANGE, "after"),
    ):
        why = (
            f"{share:.0%} of the disks' sync pace {part} the knee (real kernel, HDD-like disks), "
            f"{base.why}"
        )
        scaled.append(
            Pace(base.kib_s * share, base.low_kib_s * low, base.high_kib_s * high, source, why)
        )
    before, after = scaled
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


def capped(pace: Pace, limit_kib_s: float | None) -> Pace:
    """md never syncs faster than its max limit (DESIGN.md, "Forecast physics")."""
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
