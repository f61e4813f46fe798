"""Usable capacity against Synology's published SHR examples and rules, and the cases where space
stays unused. Sizes in TB (decimal, as Synology and disk makers print them)."""

import pytest

from app.planner.capacity import Capacity, classic, shr, tiers

TB = 10**12


def tb(*sizes: float) -> list[int]:
    return [int(s * TB) for s in sizes]


def in_tb(c: Capacity) -> tuple[float, float, float]:
    return (c.usable / TB, c.protection / TB, c.unused / TB)


# Synology Knowledge Center, "What is Synology Hybrid RAID (SHR)?"
# (synology.com/en-br/knowledgebase/DSM/tutorial/Storage/What_is_Synology_Hybrid_RAID_SHR; the
# quotes below checked word for word against the search tool's stored copy, 26 Nov 2026; the
# drive sizes are in the article's picture only, so they are inferred from its totals):
# "if the smallest drive in a classic RAID
# storage pool is 500 GB, all other drives in the storage pool can each only contribute 500 GB.
# As a result, the storage pool ends up with 2 TB of usable storage and 4.5 TB of wasted
# storage"; SHR "is able to divide the 4.5 TB of unavailable storage into smaller usable chunks".
# The article's picture: five drives of 500 GB, 1, 1.5, 2 and 2 TB (7 TB raw, which the totals
# 2 + 0.5 parity + 4.5 fix). SHR keeps the largest drive's worth for protection (Synology's RAID
# calculator): 7 - 2 = 5 TB usable, nothing wasted.
KB_DRIVES = (0.5, 1, 1.5, 2, 2)


def test_synology_kb_classic_raid_wastes_what_the_smallest_drive_cannot_match():
    assert in_tb(classic(tb(*KB_DRIVES), "raid5")) == (2.0, 0.5, 4.5)


def test_synology_kb_shr_uses_the_space_classic_raid_wastes():
    assert in_tb(shr(tb(*KB_DRIVES), 1)) == (5.0, 2.0, 0.0)
    # The chunks: md2 5 x 0.5 (raid5), md3 4 x 0.5, md4 3 x 0.5, md5 2 x 0.5 (raid1).
    assert [(t.height / TB, t.disks) for t in tiers(tb(*KB_DRIVES))] == [
        (0.5, 5),
        (0.5, 4),
        (0.5, 3),
        (0.5, 2),
    ]


# The same article: "classic RAID does not allow a storage pool to be expanded until all its
# drives have been replaced with larger drives. SHR, on the other hand, allows a storage pool to
# be expanded as soon as two of the drives are upgraded and can form a redundant storage array."
@pytest.mark.parametrize(
    ("drives", "shr_usable", "classic_usable", "shr_unused"),
    [
        ((2, 2, 2, 2), 6, 6, 0),
        ((4, 2, 2, 2), 6, 6, 2),  # one upgraded: nothing gained yet, 2 TB unused
        ((4, 4, 2, 2), 8, 6, 0),  # two upgraded: SHR grows (a mirror of the 2 TB tails)
        ((4, 4, 4, 2), 10, 6, 0),
        ((4, 4, 4, 4), 12, 12, 0),  # classic RAID grows only now
    ],
)
def test_synology_kb_shr_expands_once_two_drives_are_upgraded(
    drives, shr_usable, classic_usable, shr_unused
):
    assert shr(tb(*drives), 1).usable == shr_usable * TB
    assert shr(tb(*drives), 1).unused == shr_unused * TB
    assert classic(tb(*drives), "raid5").usable == classic_usable * TB


# Synology's RAID calculator (synology.com/support/RAID_calculator.php, stored copy checked 26
# Nov 2026): "SHR ... Minimum HDD required: 2 (with data protection) ... 1 HDD redundancy";
# "SHR-2 ... Minimum HDD required: 4 ... 2 HDD redundancy"; RAID 5 "The storage capacity of 1
# drive is reserved for data integrity check", RAID 6 "of 2 drives". The page's per-mix figures
# are computed by a script the stored copy does not hold: the mixes below apply the tier rule.
@pytest.mark.parametrize(
    ("drives", "redundancy", "usable", "protection", "unused"),
    [
        ((4, 4), 1, 4, 4, 0),  # the two-drive minimum: a mirror
        ((4, 4, 4, 4), 2, 8, 8, 0),  # the four-drive SHR-2 minimum: two drives' worth kept
        ((1, 2, 3, 4), 1, 6, 3, 1),  # SHR-1: the 4 TB's top TB has no partner
        ((1, 2, 3, 4), 2, 3, 4, 3),  # SHR-2: the top 2 TB tier (2 disks) and 1 TB are alone
        ((2, 2, 4, 4, 4), 2, 8, 8, 0),  # SHR-2, mixed: 6 (raid6 of 5 x 2) + 2 (3 x 2 tier)
        ((2, 2, 2, 8), 1, 6, 2, 6),  # one big drive: its extra 6 TB has no partner
    ],
)
def test_synology_calculator_rules(drives, redundancy, usable, protection, unused):
    assert in_tb(shr(tb(*drives), redundancy)) == (usable, protection, unused)


def test_shr_is_the_sum_less_the_largest_one_or_two_drives():
    """Synology's rule in one line, over many mixes: SHR-1 = sum - largest, SHR-2 = sum - the
    two largest; what is neither usable nor protection is unused."""
    mixes = [(1, 1, 2, 2), (3, 3, 3, 8, 8), (0.5, 1, 1.5, 2, 2), (6, 8, 10, 12, 14, 16)]
    for mix in mixes:
        sizes = sorted(tb(*mix))
        assert shr(sizes, 1).usable == sum(sizes) - sizes[-1]
        assert shr(sizes, 2).usable == sum(sizes) - sizes[-1] - sizes[-2]
        for r in (1, 2):
            assert shr(sizes, r).raw == sum(sizes)


# Third-party examples of the same rule (not Synology's own pages; the figures agree with it):
# nas-recovery.com "Synology Hybrid RAID Technology": 2 x 2 TB + 2 x 4 TB is a RAID5 of 4 x 2 TB
# plus a RAID1 of the 2 TB tails: 8 TB instead of classic RAID5's 6 TB. needtoknowit.com.au's SHR
# calculator: 2 + 3 + 4 + 4 TB gives 8.18 TiB (9 TB) under SHR, 5.46 TiB (6 TB) under RAID 5.
@pytest.mark.parametrize(
    ("drives", "shr_usable", "raid5_usable"),
    [((2, 2, 4, 4), 8, 6), ((2, 3, 4, 4), 9, 6)],
)
def test_third_party_calculator_examples(drives, shr_usable, raid5_usable):
    assert shr(tb(*drives), 1).usable == shr_usable * TB
    assert classic(tb(*drives), "raid5").usable == raid5_usable * TB
    assert round(shr(tb(*drives), 1).usable / 2**40, 2) == {8: 7.28, 9: 8.19}[shr_usable]


def test_one_disk_and_raid1_and_raid6():
    assert in_tb(shr(tb(4), 1)) == (4, 0, 0)  # SHR-1 on one disk: no protection yet
    assert in_tb(classic(tb(4, 4, 4), "raid1")) == (4, 8, 0)
    assert in_tb(classic(tb(4, 4, 4, 6), "raid6")) == (8, 8, 2)
