"""Which md arrays make a pool, on which disks, and how large each member is: read from the
arrays as the sampler parsed /proc/mdstat (pure; no /sys, no disk sizes).

DSM partitions every disk alike: 1 for the system (md0, raid1), 2 for swap (md1, raid1), then
the data. A classic RAID volume is partition 3 on each disk (one md array). An SHR pool uses
partitions 5, 6, ... in an extended partition, one per tier, each tier one md array (md2 on the
5s, md3 on the 6s, ...) joined by LVM, as DSM lays out its disks.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from app.md.mdstat import PARITY_DISKS, Array, Device

# "sda5" -> ("sda", 5); DSM 7.2's "sata1p5" and "nvme0n1p5" -> ("sata1", 5), ("nvme0n1", 5).
_PARTITION = re.compile(r"^(?:(?P<numbered>.*\d)p|(?P<lettered>[a-z]+))(?P<part>\d+)$")
SHR_FIRST_PARTITION = 5  # DSM's SHR tiers live in logical partitions 5, 6, ...
LEVELS = ("raid1", "raid5", "raid6")  # what the planner knows how to grow and rebuild
# Between and after DSM's partitions (about 0.4 GB before the data on a DSM 6 disk, ~0.1 GB at
# its end; sfdisk listings of real disks): allowed for when a new disk's size is compared.
PARTITION_SLACK_KIB = 512 * 1024


def split_member(name: str) -> tuple[str, int | None]:
    """The disk and partition number of a member as mdstat names it; a whole disk has None."""
    match = _PARTITION.match(name)
    if match is None:
        return name, None
    return match["numbered"] or match["lettered"], int(match["part"])


@dataclass(frozen=True)
class TierArray:
    """One data md array of a pool: an SHR tier, or the whole of a classic RAID volume."""

    array: str  # "md2"
    level: str  # raid1 | raid5 | raid6 (or another level, which the planner refuses)
    disks: tuple[str, ...]  # the disks holding a member, in slot order
    partition: int | None  # DSM's partition number of the members (5, 6, ...); None: whole disks
    member_kib: int  # each member's size, 1 KiB blocks
    bottom_kib: int  # where the tier starts within a disk's data space
    degraded: bool
    sync: str | None  # the running job (reshape, recovery, check ...), None when idle
    chunk_kib: int | None = None  # md's chunk ("64k chunk"); None for a raid1

    @property
    def top_kib(self) -> int:
        return self.bottom_kib + self.member_kib


@dataclass(frozen=True)
class Pool:
    """The md arrays that share disks, lowest tier first."""

    kind: Literal["shr", "classic"]
    redundancy: int  # disks that may fail: 1 (SHR-1, RAID5, RAID1 pair) or 2 (SHR-2, RAID6)
    tiers: tuple[TierArray, ...]
    overhead_kib: int  # DSM's system and swap partitions plus slack, on every disk

    @property
    def disks(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for tier in self.tiers:
            seen.update(dict.fromkeys(tier.disks))
        return tuple(seen)

    def data_kib(self, disk: str) -> int:
        """How much of a disk the pool's arrays hold (a tail above them is invisible here)."""
        return max((t.top_kib for t in self.tiers if disk in t.disks), default=0)

    @property
    def name(self) -> str:
        if self.kind == "shr":
            return f"SHR-{self.redundancy}"
        return self.tiers[0].level.replace("raid", "RAID")


def member_kib(array: Array, old_raid_disks: int | None) -> int | None:
    """Each member's size: the array's size over its data disks. While a grow runs, mdstat still
    prints the old size, so the old member count divides it (sysfs raid_disks "new (old)")."""
    if array.blocks is None or array.raid_disks is None:
        return None
    disks = array.raid_disks
    if array.sync is not None and array.sync.action == "reshape":
        disks = old_raid_disks if old_raid_disks is not None else disks - 1
    if array.level == "raid1":
        return array.blocks
    parity = PARITY_DISKS.get(array.level or "")
    if parity is None or disks - parity < 1:
        return None
    return array.blocks // (disks - parity)


def pools(
    data: Sequence[Array],
    system: Iterable[Array] = (),
    old_raid_disks: Mapping[str, int] | None = None,
) -> list[Pool]:
    """The pools among the data arrays (those sharing a disk belong together), largest first.
    `system` are DSM's md0/md1: their members' size is what a new disk gives up before data
    (none on a plain mdadm box, whose arrays may take whole disks)."""
    old = old_raid_disks or {}
    dsm = sum(a.blocks or 0 for a in system if a.level == "raid1")
    overhead = dsm + PARTITION_SLACK_KIB if dsm else 0
    groups: list[list[Array]] = []
    for array in data:
        disks = _disks(array)
        joined = [g for g in groups if any(disks & _disks(a) for a in g)]
        merged = [array] + [a for g in joined for a in g]
        groups = [g for g in groups if g not in joined] + [merged]
    out = [_pool(g, old, overhead) for g in groups]
    return sorted(out, key=lambda p: (-len(p.disks), p.tiers[0].array))


def _disks(array: Array) -> set[str]:
    return {split_member(d.name)[0] for d in _members(array)}


def _members(array: Array) -> list[Device]:
    """Members holding data: spares and faulty ones do not count."""
    return [d for d in array.devices if "S" not in d.flags and "F" not in d.flags]


def _pool(arrays: list[Array], old: Mapping[str, int], overhead: int) -> Pool:
    def order(array: Array) -> tuple[int, int]:
        parts = [split_member(d.name)[1] or 0 for d in array.devices]
        return (min(parts, default=0), int(array.name[2:]) if array.name[2:].isdigit() else 0)

    tiers, bottom = [], 0
    for array in sorted(arrays, key=order):
        devices = sorted(_members(array), key=lambda d: d.index)
        size = member_kib(array, old.get(array.name)) or 0
        partition = split_member(devices[0].name)[1] if devices else None
        tiers.append(
            TierArray(
                array=array.name,
                level=array.level or "unknown",
                disks=tuple(split_member(d.name)[0] for d in devices),
                partition=partition,
                member_kib=size,
                bottom_kib=bottom,
                degraded=array.degraded,
                sync=array.sync.action if array.sync is not None else None,
                chunk_kib=array.chunk_kb,
            )
        )
        bottom += size
    layered = len(tiers) > 1 or any((t.partition or 0) >= SHR_FIRST_PARTITION for t in tiers)
    redundancy = 2 if any(t.level == "raid6" for t in tiers) else 1
    return Pool("shr" if layered else "classic", redundancy, tuple(tiers), overhead)
