"""Plans on captured layouts (tests/fixtures) and on the simulated box: which arrays rebuild, grow
or are created, in what order, how long, the capacity before and after, and the refusals."""

from pathlib import Path

import pytest

from app.kernel import mdstat_parse
from app.kernel.host import Host
from app.live.array_view import role_of
from app.planner import capacity, layout
from app.planner.change import BadChange, Change, ChangePlan, plan_change
from app.planner.paces import (
    ASSUMED_DISK_KIB_S,
    KERNEL_GROWS,
    SEEK_REQUESTS_S,
    Geometry,
    History,
)
from app.simulator.box import Simulator
from tests import PROJECT_ROOT

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
TB_KIB = 10**12 // 1024
NOW = 1_790_000_000.0


def pools_of(text: str, old: dict[str, int] | None = None) -> list[layout.Pool]:
    md = mdstat_parse.parse(text)
    data = [a for a in md.arrays if role_of(a) == "data"]
    system = [a for a in md.arrays if role_of(a) != "data"]
    return layout.pools(data, system, old)


def ds415() -> layout.Pool:
    """A DS415's SHR pool captured while md3 grew onto a new disk (sdd): md2 over four 2 TB
    partitions, md3 over three more 2 TB ones (sda, sdb and the new sdd are 4 TB disks)."""
    (pool,) = pools_of((FIXTURES / "mdstat" / "17-synology-ds415-reshape.txt").read_text())
    return pool


def plan(pool: layout.Pool, kind: str, tb: float, member: str | None = None, **kw) -> ChangePlan:
    history = kw.pop("history", History())
    return plan_change(pool, Change(kind, int(tb * TB_KIB), member), history, NOW, **kw)  # type: ignore[arg-type]


def sizes(pool: layout.Pool) -> list[int]:
    return [pool.data_kib(d) for d in pool.disks]


def test_a_synology_shr_pool_is_read_from_its_partitions():
    pool = ds415()
    assert pool.name == "SHR-1"
    assert [(t.array, t.partition, t.level, t.disks) for t in pool.tiers] == [
        ("md2", 5, "raid5", ("sda", "sdb", "sdd", "sdc")),
        ("md3", 6, "raid5", ("sda", "sdb", "sdd")),
    ]
    # md3 reshapes from 2 to 3 disks: mdstat still prints the old size, one member's worth.
    assert pool.tiers[1].member_kib == 1953494784
    assert pool.tiers[0].member_kib == 5846049792 // 3
    assert pool.overhead_kib == 2490176 + 2097088 + layout.PARTITION_SLACK_KIB
    assert pool.data_kib("sdc") == pool.tiers[0].member_kib
    assert pool.data_kib("sda") == pool.tiers[1].top_kib


def test_adding_a_disk_as_large_as_the_largest_grows_every_tier_in_order():
    pool = ds415()
    p = plan(pool, "add", 4)
    assert p.possible and p.refusals == ()
    assert [(s.array, s.action, s.disks_before, s.disks_after) for s in p.steps] == [
        ("md2", "grow", 4, 5),
        ("md3", "grow", 3, 4),
    ]
    assert p.steps[0].knee == pytest.approx(3 / 4)
    assert p.steps[1].knee == pytest.approx(2 / 3)
    assert p.steps[0].work_kib == pool.tiers[0].member_kib  # md counts a reshape per device
    # The capacity after is Synology's SHR-1 rule over the disks with the new one.
    after = capacity.shr([*sizes(pool), pool.tiers[1].top_kib], 1)
    assert p.after is not None and p.after.usable == after.usable
    assert p.after.usable - p.before.usable == pool.tiers[1].top_kib
    assert p.total is not None and p.total.seconds == pytest.approx(
        sum(s.duration.seconds for s in p.steps)
    )
    assert p.total.low < p.total.seconds < p.total.high
    assert any("md3 (reshape) runs now" in n for n in p.notes)


def test_a_larger_disk_leaves_its_top_unused_and_says_why():
    p = plan(ds415(), "add", 8)
    assert [s.array for s in p.steps] == ["md2", "md3"]
    assert p.after is not None and p.after.unused > 3.9 * TB_KIB
    assert any("stays in no redundant array" in n and "SHR-1" in n for n in p.notes)


def test_a_disk_ending_inside_a_tier_joins_only_the_tiers_below():
    p = plan(ds415(), "add", 3)
    assert [s.array for s in p.steps] == ["md2"]
    assert any("ends inside md3's tier" in n for n in p.notes)
    assert p.after is not None and p.after.unused > 0.9 * TB_KIB


def test_a_disk_smaller_than_the_lowest_tier_is_refused():
    p = plan(ds415(), "add", 1)
    assert not p.possible and p.steps == () and p.after is None
    assert "smaller than md2's members" in p.refusals[0]


def test_replacing_the_small_disk_rebuilds_its_tier_then_grows_the_next():
    """sdc holds only md2: its 4 TB successor is rebuilt into md2 and then joins md3."""
    p = plan(ds415(), "replace", 4, "sdc")
    assert [(s.array, s.action) for s in p.steps] == [("md2", "rebuild"), ("md3", "grow")]
    assert p.steps[0].work_kib == ds415().tiers[0].member_kib


def test_replacing_with_a_smaller_disk_is_refused():
    p = plan(ds415(), "replace", 2, "sda")
    assert not p.possible
    assert "smaller than what sda holds in md2 + md3" in p.refusals[0]


@pytest.mark.parametrize(
    ("change", "member", "message"),
    [("replace", "sdx", "'sdx' is not a disk"), ("add", None, "")],
)
def test_bad_changes_raise(change, member, message):
    if not message:
        with pytest.raises(BadChange, match="not a real disk"):
            plan_change(ds415(), Change("add", -5), History(), NOW)
        return
    with pytest.raises(BadChange, match=message):
        plan(ds415(), change, 4, member)


def test_a_degraded_array_refuses_any_change():
    (pool,) = pools_of((FIXTURES / "kernel" / "raid5-degraded" / "proc" / "mdstat").read_text())
    with pytest.raises(BadChange, match="md0 is degraded"):
        plan(pool, "replace", 1, "vda")
    with pytest.raises(BadChange, match="md0 is degraded"):
        plan(pool, "add", 1)


def test_raid10_and_raid0_are_not_planned():
    text = (FIXTURES / "kernel" / "raid10-resync-and-raid0" / "proc" / "mdstat").read_text()
    for pool in pools_of(text):
        p = plan(pool, "add", 1)
        assert not p.possible and "plans RAID1/5/6 and SHR pools only" in p.refusals[0]


def test_a_classic_raid5_grows_and_uses_only_its_members_size():
    """The real kernel's RAID5 over whole disks (no DSM partitions): classic RAID."""
    (pool,) = pools_of((FIXTURES / "kernel" / "raid5-clean" / "proc" / "mdstat").read_text())
    assert pool.kind == "classic" and pool.name == "RAID5"
    member = pool.tiers[0].member_kib
    bigger = plan_change(pool, Change("add", member * 3), History(), NOW)
    assert [(s.action, s.disks_after) for s in bigger.steps] == [("grow", 4)]
    assert bigger.after is not None and bigger.after.usable == member * 3
    assert any("classic RAID uses the same" in n for n in bigger.notes)
    swap = plan_change(pool, Change("replace", member * 2, "vdb"), History(), NOW)
    assert [s.action for s in swap.steps] == ["rebuild"]
    assert swap.after is not None and swap.after.usable == swap.before.usable
    assert swap.after.unused == member  # the new disk's second half, until all are larger


# A DSM SHR pool written as DSM lays it out (the example in hddfaqs.com "How does Synology Hybrid
# RAID work": 2 x 1 TB + 2 x 2 TB is md2 over four 1 TB partitions and md3, a mirror, over the
# two larger disks' second TB).
SHR_1_1_2_2 = """Personalities : [raid1] [raid6] [raid5] [raid4]
md3 : active raid1 sdc6[0] sdd6[1]
      976261120 blocks super 1.2 [2/2] [UU]

md2 : active raid5 sda5[0] sdb5[1] sdc5[2] sdd5[3]
      2915894784 blocks super 1.2 level 5, 64k chunk, algorithm 2 [4/4] [UUUU]

md1 : active raid1 sda2[0] sdb2[1] sdc2[2] sdd2[3]
      2097088 blocks [4/4] [UUUU]

md0 : active raid1 sda1[0] sdb1[1] sdc1[2] sdd1[3]
      2490176 blocks [4/4] [UUUU]

unused devices: <none>
"""


def test_replacing_a_small_disk_with_a_large_one_turns_the_mirror_into_raid5():
    """hddfaqs.com: "When you replace one of the 1TB devices with a 3TB device, the first md will
    be repaired, the second md will be reshaped to a RAID 5 containing the 'second TB' of each of
    the larger 3 devices and the last TB is not available." """
    (pool,) = pools_of(SHR_1_1_2_2)
    p = plan(pool, "replace", 3, "sda")
    assert [(s.array, s.action, s.level_before, s.level_after, s.disks_after) for s in p.steps] == [
        ("md2", "rebuild", "raid5", "raid5", 4),
        ("md3", "grow", "raid1", "raid5", 3),
    ]
    assert p.steps[1].knee == pytest.approx(1 / 2)  # a 2-disk RAID5 holds one disk of data
    assert p.after is not None and p.before is not None
    assert p.after.usable - p.before.usable == pool.tiers[1].member_kib
    assert 0.9 * TB_KIB < p.after.unused < 1.1 * TB_KIB


def test_a_tier_is_created_once_two_disks_reach_above_the_pool():
    """hddfaqs.com, next: "As soon as you replace one of the 2TB devices with another 3TB device,
    a RAID1 of the last TB of the now two 3TB devices will be created". mdstat shows partitions
    only, so the first 3 TB disk's free tail is given as its size."""
    (pool,) = pools_of(SHR_1_1_2_2)
    sda = 3 * TB_KIB  # sda already replaced by a 3 TB disk (its tail is in no array)
    p = plan(pool, "replace", 3, "sdd", disk_kib={"sda": sda})
    assert [(s.array, s.action, s.level_after, s.disks_after) for s in p.steps] == [
        ("md2", "rebuild", "raid5", 4),
        ("md3", "rebuild", "raid1", 2),
        ("md4", "create", "raid1", 2),
    ]
    assert p.after is not None and p.after.usable > p.before.usable + 0.9 * TB_KIB


def test_shr2_grows_raid6_tiers():
    text = (FIXTURES / "kernel" / "raid6-resync" / "proc" / "mdstat").read_text()
    (pool,) = pools_of(text.replace("vda[", "sda5[").replace("vdb[", "sdb5[")
                       .replace("vdc[", "sdc5[").replace("vdd[", "sdd5["))  # fmt: skip
    assert pool.name == "SHR-2"
    member = pool.tiers[0].member_kib
    p = plan_change(pool, Change("add", member + pool.overhead_kib), History(), NOW)
    assert [(s.level_after, s.disks_after, s.knee) for s in p.steps] == [("raid6", 5, 2 / 3)]
    assert p.after is not None and p.after.usable == member * 3


def test_the_simulated_box_plans_its_next_expansion(tmp_path: Path):
    """The demo's box, read through host.py as the sampler reads it: md2 grows (3 -> 4) now,
    md3 is a mirror of sda and sdb's second TB. A fifth 4 TB disk grows md2 and turns md3 into
    a RAID5 on three disks, after the running reshape."""
    Simulator(tmp_path, speedup=1.0)
    host = Host(tmp_path / "proc", tmp_path / "sys")
    raid_disks = host.read_array_sysfs("md2").raid_disks
    assert raid_disks == (4, 3)
    (pool,) = pools_of(host.read_mdstat() or "", {"md2": raid_disks[1] or 0})
    assert pool.disks == ("sda", "sdb", "sdc", "sdd")
    assert [t.member_kib for t in pool.tiers] == [1_953_494_784, 976_758_848]
    # Its disks' sizes hold their partitions: sdc only md2's, the others md3's too.
    sizes = host.read_disk_kib(["sda5", "sdb5", "sdc5", "sdd5"])
    assert sizes["sda"] == sizes["sdd"] > sizes["sdc"] >= pool.tiers[0].top_kib + pool.overhead_kib
    assert host.read_rotational(sizes) == dict.fromkeys(sizes, True)
    p = plan(pool, "add", 4, disk_kib=sizes)
    assert [(s.array, s.action, s.level_after, s.disks_after) for s in p.steps] == [
        ("md2", "grow", "raid5", 5),
        ("md3", "grow", "raid5", 3),
    ]
    assert any("md2 (reshape) runs now" in n for n in p.notes)


def test_paces_come_from_history_and_say_so():
    pool = ds415()
    member = pool.tiers[0].member_kib
    assumed = plan(pool, "replace", 4, "sdc")
    assert assumed.steps[0].source == "assumed"
    assert assumed.steps[0].duration.seconds == pytest.approx(member / ASSUMED_DISK_KIB_S)
    grow = plan(pool, "add", 4).steps[0]
    knee = 3 / 4
    # Before the knee a member of 64 KiB chunks on spinning disks (unknown ones are taken as
    # such) serves 120 requests/s: 4/3 KiB read and 1 written a KiB of progress, in requests of
    # the size 6.1 makes when the kernel is unknown.
    six_one = KERNEL_GROWS["6.1"]
    seek_bound = SEEK_REQUESTS_S / (4 / 3 / six_one.read_kib + 1 / six_one.write_kib)
    assert seek_bound == pytest.approx(
        SEEK_REQUESTS_S / Geometry(3, 4, 64).requests_per_kib(six_one.read_kib, six_one.write_kib)
    )
    expected = member * knee / seek_bound + member * (1 - knee) / (
        ASSUMED_DISK_KIB_S * six_one.after_knee[0]
    )
    assert grow.duration.seconds == pytest.approx(expected)
    assert grow.source == "assumed"
