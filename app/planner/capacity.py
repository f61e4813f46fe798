"""Usable capacity by Synology's rules, on sizes in any one unit (pure).

Classic RAID builds on the smallest member: every member gives that much and the rest is unused.
SHR cuts the disks into tiers at each distinct size; each tier is an md array across the disks that
reach it, and gives its height times (disks - redundancy) when it has more disks than redundancy.
What Synology's own pages say (checked against stored copies, tests/planner/test_capacity.py):
classic RAID "bases its storage creation on the smallest drive"; SHR "divides each drive's
storage space into smaller chunks" and "allows a storage pool to be expanded as soon as two of
the drives are upgraded and can form a redundant storage array" (Knowledge Center, "What is
Synology Hybrid RAID (SHR)?"); SHR gives 1 drive of redundancy from 2 drives, SHR-2 gives 2 from 4
(Synology's RAID calculator). That the tiers add up to the sum less the largest drive (SHR-1) or
the two largest (SHR-2) follows from the tier rule; third-party calculators print the same.
"""

from collections.abc import Sequence
from dataclasses import dataclass

# Parity disks of a classic level; raid1 keeps one copy's worth whatever its width.
CLASSIC_PARITY = {"raid5": 1, "raid6": 2}


@dataclass(frozen=True)
class SizeTier:
    """A tier as disk sizes cut it: a height on each disk, and how many disks reach its top."""

    bottom: int  # where the tier starts on each of its disks
    top: int  # where it ends
    disks: int  # how many disks reach the top

    @property
    def height(self) -> int:
        return self.top - self.bottom


@dataclass(frozen=True)
class Capacity:
    usable: int  # for data
    protection: int  # parity and mirror copies
    unused: int  # on the disks but in no redundant array

    @property
    def raw(self) -> int:
        return self.usable + self.protection + self.unused


def tiers(sizes: Sequence[int]) -> list[SizeTier]:
    """SHR's tiers: one per distinct size, each as high as the step from the size below."""
    out, bottom = [], 0
    for size in sorted(set(sizes)):
        if size > bottom:
            out.append(SizeTier(bottom, size, sum(1 for s in sizes if s >= size)))
            bottom = size
    return out


def shr(sizes: Sequence[int], redundancy: int) -> Capacity:
    """SHR-1 (redundancy 1) or SHR-2 (2). One disk alone is SHR-1 without protection."""
    if len(sizes) == 1 and redundancy == 1:
        return Capacity(sizes[0], 0, 0)
    usable = protection = unused = 0
    for tier in tiers(sizes):
        if tier.disks > redundancy:
            usable += tier.height * (tier.disks - redundancy)
            protection += tier.height * redundancy
        else:
            unused += tier.height * tier.disks
    return Capacity(usable, protection, unused)


def classic(sizes: Sequence[int], level: str) -> Capacity:
    """RAID1/5/6 over the smallest member's size; larger members' excess is unused."""
    if not sizes:
        return Capacity(0, 0, 0)
    smallest, n = min(sizes), len(sizes)
    copies = CLASSIC_PARITY.get(level, n - 1)  # raid1: every other member is a copy
    unused = sum(sizes) - smallest * n
    return Capacity(smallest * (n - copies), smallest * copies, unused)
