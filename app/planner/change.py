"""A change planned on a pool: which md arrays rebuild, grow or are created, in DSM's order, each
step's duration with a range and with boost, and the usable capacity before and after (pure).

DSM's order: a replaced disk's arrays are rebuilt one after another (md2, then md3, ...), then
every array the new disk can now join grows, lowest tier first, then new tiers are created
(as DSM does it: one SHR pool's arrays reshape in turn). A grow reads the old
layout and writes the new one until its knee (old / new data disks), then only writes.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from app.planner import capacity, paces, timing
from app.planner.layout import LEVELS, Pool, TierArray, split_member
from app.planner.timing import Duration, Step

# mdboost reads partitions, not disks: a disk within this share of a size is taken as that size
# (disks of one nominal size have the same LBA count, IDEMA LBA1-03; DSM's own partitions and
# our estimate of them differ by well under 1 %).
SAME_SIZE = 0.01
MAX_DISK_KIB = 2**40  # 1 PiB: no disk is larger


class BadChange(ValueError):
    """The change cannot be planned as asked: an unknown member, a degraded pool (the API's 422)."""


@dataclass(frozen=True)
class Change:
    kind: Literal["add", "replace"]
    disk_kib: int  # the new disk's whole size, 1 KiB blocks
    member: str | None = None  # the disk replaced ("sdb"; a member partition "sdb5" names it too)


@dataclass(frozen=True)
class ChangePlan:
    """The plan of a disk change on a pool: possible or why not, its steps and how long."""

    change: Change
    pool: str  # "SHR-1", "RAID5" ...
    arrays: tuple[str, ...]
    possible: bool
    refusals: tuple[str, ...]  # why not, when not possible
    steps: tuple[Step, ...]
    total: Duration | None
    boosted_total: Duration | None
    before: capacity.Capacity  # KiB
    after: capacity.Capacity | None  # KiB
    notes: tuple[str, ...] = field(default=())  # unused space and why, assumptions


@dataclass(frozen=True)
class _Tier:
    """A tier after the change: its array (None for a new one), level, member size and disks."""

    array: str | None
    level: str
    member_kib: int
    disks: int


def plan_change(
    pool: Pool,
    change: Change,
    history: paces.History,
    now: float,
    disk_kib: Mapping[str, int] | None = None,
) -> ChangePlan:
    """Plan `change` on `pool`. `disk_kib` gives whole-disk sizes where known: a tail above the
    pool's arrays is otherwise invisible (mdstat shows partitions only)."""
    _check(pool, change)
    before = _capacity([_Tier(t.array, t.level, t.member_kib, len(t.disks)) for t in pool.tiers])
    arrays = tuple(t.array for t in pool.tiers)
    refusal = _refusal(pool, change)
    if refusal:
        return ChangePlan(
            change, pool.name, arrays, False, (refusal,), (), None, None, before, None
        )
    new_kib = change.disk_kib - pool.overhead_kib
    after: list[_Tier] = []
    steps: list[Step] = []
    notes: list[str] = []
    joined_top = 0
    if change.kind == "replace":
        for tier in (t for t in pool.tiers if change.member in t.disks):
            steps.append(timing.rebuild(tier, history, now))
    for tier in pool.tiers:
        keeps = change.kind == "replace" and change.member in tier.disks
        disks = len(tier.disks)
        if keeps or _fits(new_kib, tier.top_kib):
            joined_top = tier.top_kib
        if keeps or not _fits(new_kib, tier.top_kib):
            after.append(_Tier(tier.array, tier.level, tier.member_kib, disks))
            continue
        level = _grown_level(pool, tier)
        steps.append(timing.grow(tier, level, history, now))
        after.append(_Tier(tier.array, level, tier.member_kib, disks + 1))
    created, unused = _new_tiers(pool, change, new_kib, joined_top, disk_kib or {})
    next_md = 1 + max(int(a[2:]) for a in arrays if a[2:].isdigit())
    for new in created:
        name = f"md{next_md}"
        next_md += 1
        steps.append(timing.create(name, new.level, new.disks, new.member_kib, history, now))
        after.append(_Tier(name, new.level, new.member_kib, new.disks))
    notes += _unused_notes(pool, change, new_kib, joined_top, unused)
    notes += _running_notes(pool)
    total = boosted = None
    if steps:
        total = timing.total([s.duration for s in steps])
        boosted = timing.total([s.boosted for s in steps])
    capacity_after = _capacity(after, unused)
    return ChangePlan(
        change, pool.name, arrays, True, (), tuple(steps), total, boosted, before, capacity_after,
        tuple(notes),
    )  # fmt: skip


def _check(pool: Pool, change: Change) -> None:
    if not 0 < change.disk_kib <= MAX_DISK_KIB:
        raise BadChange(f"a disk of {change.disk_kib} KiB is not a real disk")
    if change.kind == "replace" and change.member not in pool.disks:
        known = ", ".join(pool.disks)
        raise BadChange(f"{change.member!r} is not a disk of the {pool.name} pool ({known})")
    degraded = [t.array for t in pool.tiers if t.degraded]
    if degraded:
        raise BadChange(
            f"{', '.join(degraded)} is degraded: replace its missing member first; "
            "a change on a degraded pool risks the data"
        )


def _refusal(pool: Pool, change: Change) -> str | None:
    odd = [t for t in pool.tiers if t.level not in LEVELS or t.member_kib <= 0]
    if odd:
        return f"{odd[0].array} is {odd[0].level}: mdboost plans RAID1/5/6 and SHR pools only"
    new_kib = change.disk_kib - pool.overhead_kib
    if change.kind == "replace" and change.member is not None:
        needed = pool.data_kib(change.member)
        held = " + ".join(t.array for t in pool.tiers if change.member in t.disks)
        if not _fits(new_kib, needed):
            return (
                f"the new disk ({tb(change.disk_kib)}) is smaller than what {change.member} "
                f"holds in {held} ({tb(needed + pool.overhead_kib)} with DSM's partitions): "
                "md cannot rebuild onto a smaller member"
            )
        return None
    bottom = pool.tiers[0]
    if not _fits(new_kib, bottom.top_kib):
        return (
            f"the new disk ({tb(change.disk_kib)}) is smaller than {bottom.array}'s members "
            f"({tb(bottom.member_kib + pool.overhead_kib)} with DSM's partitions): it cannot "
            "join the pool"
        )
    return None


def _fits(new_kib: int, top_kib: int) -> bool:
    return new_kib >= top_kib * (1 - SAME_SIZE)


def _grown_level(pool: Pool, tier: TierArray) -> str:
    """SHR turns a two-disk mirror into RAID5 (SHR-2: a three-disk one into RAID6) on a third
    (fourth) disk; a classic RAID1 gains a mirror; RAID5/6 stay what they are."""
    if tier.level == "raid1" and pool.kind == "shr":
        return "raid6" if pool.redundancy == 2 else "raid5"
    return tier.level


def _new_tiers(
    pool: Pool, change: Change, new_kib: int, joined_top: int, disk_kib: Mapping[str, int]
) -> tuple[list[_Tier], int]:
    """SHR's tiers above the pool's top array once the new disk is in (where other disks are
    known to reach that high), and the space left in no redundant array (KiB)."""
    top = pool.tiers[-1].top_kib
    if pool.kind == "classic":
        return [], max(new_kib - top, 0)
    sizes = {d: max(pool.data_kib(d), disk_kib.get(d, 0) - pool.overhead_kib) for d in pool.disks}
    if change.kind == "replace" and change.member is not None:
        sizes.pop(change.member)
    sizes["new disk"] = new_kib
    # A disk within SAME_SIZE of the top ends there: what is left is DSM's slack, no tier.
    tails = [s - top for s in sizes.values() if s > top * (1 + SAME_SIZE)]
    created = []
    for tier in capacity.tiers(tails):
        if tier.disks > pool.redundancy:
            level = _new_level(pool.redundancy, tier.disks)
            created.append(_Tier(None, level, tier.height, tier.disks))
    made = sum(t.member_kib * t.disks for t in created)
    # The new disk between the tiers it joined and the next one it cannot fill, plus every
    # tail left in no array.
    gap = max(min(new_kib, top) - joined_top, 0)
    return created, gap + sum(tails) - made


def _new_level(redundancy: int, disks: int) -> str:
    if redundancy == 1:
        return "raid1" if disks == 2 else "raid5"
    return "raid1" if disks == 3 else "raid6"


def _capacity(tiers: list[_Tier], unused: int = 0) -> capacity.Capacity:
    usable = sum(t.member_kib * timing.data_disks(t.level, t.disks) for t in tiers)
    raw = sum(t.member_kib * t.disks for t in tiers)
    return capacity.Capacity(usable, raw - usable, unused)


def _unused_notes(
    pool: Pool, change: Change, new_kib: int, joined_top: int, unused: int
) -> list[str]:
    notes = []
    top = pool.tiers[-1].top_kib
    if pool.kind == "classic" and new_kib > top * (1 + SAME_SIZE):
        notes.append(
            f"{tb(new_kib - top)} of the new disk stays unused: classic RAID uses the same "
            f"{tb(top)} of every member; it grows only once every member is larger"
        )
    elif joined_top < top and new_kib > joined_top:
        nxt = next(t for t in pool.tiers if t.top_kib > joined_top)
        notes.append(
            f"{tb(min(new_kib, top) - joined_top)} of the new disk stays unused: it ends inside "
            f"{nxt.array}'s tier ({tb(nxt.top_kib + pool.overhead_kib)} needed); DSM may refuse "
            "a disk smaller than the pool's largest unless it matches one"
        )
    if pool.kind == "shr" and unused > 0 and new_kib > top * (1 + SAME_SIZE):
        notes.append(
            f"{tb(unused)} stays in no redundant array: SHR-{pool.redundancy} protects a tier "
            f"only once {pool.redundancy + 1} disks reach it (Synology: the largest "
            f"{'drive holds' if pool.redundancy == 1 else 'two drives hold'} the protection); "
            "disks whose free tail mdboost cannot see may change this"
        )
    return notes


def _running_notes(pool: Pool) -> list[str]:
    running = [f"{t.array} ({t.sync})" for t in pool.tiers if t.sync is not None]
    if not running:
        return []
    return [f"{', '.join(running)} runs now: this plan starts once it has finished"]


def member_disk(name: str) -> str:
    """The disk a member names: "sdb5" and "sdb" both name sdb."""
    return split_member(name)[0]


def tb(kib: float) -> str:
    """A size as disk makers print it: decimal TB, or GB below a tenth of a TB."""
    size = kib * 1024
    return f"{size / 1e12:.1f} TB" if size >= 1e11 else f"{size / 1e9:.1f} GB"
