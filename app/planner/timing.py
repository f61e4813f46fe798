"""How long each step of a planned change takes, from the paces (pure): a rebuild or a new
array's first sync goes at the disks' sync pace; a grow reads the old layout and writes the new
one until its knee (old / new data disks), then only writes (app/forecast/physics.py)."""

from dataclasses import dataclass
from typing import Literal

from app.md.mdstat import PARITY_DISKS
from app.planner import paces
from app.planner.layout import TierArray


@dataclass(frozen=True)
class Duration:
    seconds: float
    low: float  # the fast end
    high: float  # the slow end

    def __add__(self, other: "Duration") -> "Duration":
        return Duration(self.seconds + other.seconds, self.low + other.low, self.high + other.high)


@dataclass(frozen=True)
class Step:
    array: str
    action: Literal["rebuild", "grow", "create"]
    level_before: str | None  # None for an array created
    level_after: str
    disks_before: int
    disks_after: int
    work_kib: int  # what md counts: per disk for a rebuild or a new array, the old data for a grow
    knee: float | None  # a grow's knee, share of its work
    duration: Duration
    boosted: Duration
    source: paces.Source  # the least sure of the paces it rests on
    why: str  # what the paces rest on
    boost_why: str

    @property
    def what(self) -> str:
        if self.action == "rebuild":
            return f"{self.array}: rebuild the member on the new disk ({self.level_after})"
        if self.action == "create":
            return f"{self.array}: create a {self.level_after} on {self.disks_after} disks"
        before = f"{self.level_before} on {self.disks_before}"
        return f"{self.array}: grow {before} to {self.level_after} on {self.disks_after} disks"


def data_disks(level: str, disks: int) -> int:
    """Disks' worth of data in an array of `level` on `disks` members."""
    if level == "raid1":
        return 1
    return max(disks - PARITY_DISKS.get(level, 1), 0)


def rebuild(tier: TierArray, history: paces.History, now: float, disks_after: int = 0) -> Step:
    """The new disk's member of `tier` written from the others (or a classic RAID1's new
    mirror, `disks_after` members then)."""
    pace = paces.capped(paces.sync_pace(history, tier.member_kib, now), history.speed_max_kib_s)
    fast = paces.boosted(pace, history.boost_sync, history.boost_max_kib_s)
    n = len(tier.disks)
    return Step(
        tier.array, "rebuild", tier.level, tier.level, n, disks_after or n, tier.member_kib, None,
        _at(tier.member_kib, pace), _at(tier.member_kib, fast), pace.source, pace.why,
        history.boost_sync.why,
    )  # fmt: skip


def create(
    name: str, level: str, disks: int, member_kib: int, history: paces.History, now: float
) -> Step:
    """A new tier's array: its first sync writes every member once."""
    pace = paces.capped(paces.sync_pace(history, member_kib, now), history.speed_max_kib_s)
    fast = paces.boosted(pace, history.boost_sync, history.boost_max_kib_s)
    return Step(
        name, "create", None, level, 0, disks, member_kib, None,
        _at(member_kib, pace), _at(member_kib, fast), pace.source,
        f"its first sync, {pace.why}", history.boost_sync.why,
    )  # fmt: skip


def grow(tier: TierArray, level: str, history: paces.History, now: float) -> Step:
    """`tier` reshaped onto one more disk, as `level`."""
    n = len(tier.disks)
    if level == "raid1":  # a classic RAID1 gains a mirror: a rebuild, at the sync's pace
        return rebuild(tier, history, now, disks_after=n + 1)
    old_data = 1 if tier.level == "raid1" else data_disks(tier.level, n)
    new_data = data_disks(level, n + 1)
    work = tier.member_kib  # md counts a reshape per device of the new layout, like a sync
    knee = old_data / new_data if new_data > old_data else None
    geometry = paces.Geometry(max(old_data, 1), max(new_data, 1), tier.chunk_kib)
    before, after = paces.grow_paces(history, work, now, geometry)
    limit, boost_limit = history.speed_max_kib_s, history.boost_max_kib_s
    before, after = paces.capped(before, limit), paces.capped(after, limit)
    fast_before = paces.boosted(before, history.boost_grow, boost_limit)
    fast_after = paces.boosted(after, history.boost_grow, boost_limit)
    sources = (before.source, after.source)
    source: paces.Source = next(
        (s for s in ("assumed", "physics", "measured") if s in sources), "measured"
    )
    why = f"before the knee {before.why}; after it {after.why}"
    return Step(
        tier.array, "grow", tier.level, level, n, n + 1, work, knee,
        _grow_time(work, knee, before, after), _grow_time(work, knee, fast_before, fast_after),
        source, why, history.boost_grow.why,
    )  # fmt: skip


def _grow_time(work: int, knee: float | None, before: paces.Pace, after: paces.Pace) -> Duration:
    head = work * (knee if knee is not None else 1.0)
    tail = work - head
    return Duration(
        head / before.kib_s + tail / after.kib_s,
        head / before.high_kib_s + tail / after.high_kib_s,
        head / before.low_kib_s + tail / after.low_kib_s,
    )


def _at(work: int, pace: paces.Pace) -> Duration:
    return Duration(work / pace.kib_s, work / pace.high_kib_s, work / pace.low_kib_s)


def total(durations: list[Duration]) -> Duration:
    """Steps run one after another (DSM reshapes a pool's arrays in turn)."""
    total = durations[0]
    for d in durations[1:]:
        total = total + d
    return total
