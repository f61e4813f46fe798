"""Each verdict from the numbers that define it, and the near misses that must not trigger it."""

from dataclasses import replace

import pytest

from app.diagnosis import text
from app.diagnosis.rules import VERDICTS, MemberIo, Observation, ProcessIo, judge
from app.diagnosis.thresholds import THRESHOLDS


def member(
    disk: str, busy: float = 0.3, read: float = 6000, write: float = 0, wait: float | None = 4.0
) -> MemberIo:
    return MemberIo(f"{disk}5", disk, busy, read, write, 60.0, wait)


CALM = Observation(
    now=1000.0,
    array="md2",
    level="raid5",
    action="resync",
    speed_kb_s=6000,
    min_kb_s=1000,
    max_kb_s=200000,
    stripe_cache_size=4096,
    stripe_cache_active=800,
    group_thread_cnt=0,
    members=tuple(member(d) for d in ("sda", "sdb", "sdc", "sdd")),
    threads_cpu={"md2_raid5": 0.2, "md2_resync": 0.05},
    mem_available_kib=4_000_000,
    window_s=30.0,
)


def test_a_calm_sync_has_no_verdict() -> None:
    assert judge(CALM) == {}


def test_every_threshold_has_a_reason_and_a_unit() -> None:
    assert all(t.reason and t.unit for t in THRESHOLDS.values())


def test_held_by_the_max() -> None:
    obs = replace(CALM, speed_kb_s=9700, max_kb_s=10000, max_local=True)
    found = judge(obs)
    assert list(found) == ["held_by_max"]
    assert found["held_by_max"] == {"speed_kb_s": 9700, "max_kb_s": 10000, "local": True}
    assert "this array's own maximum (10.2 MB/s)" in text.sentence(
        "held_by_max", found["held_by_max"]
    )
    assert judge(replace(obs, speed_kb_s=8500)) == {}


def test_yielding_to_a_reader_names_the_program_and_the_busiest_disk() -> None:
    # Real kernel 6.1, tests/realkernel: a dd reading the array, md at 10 MB/s, not at its min.
    members = (member("sda", busy=0.92, read=32000), *(member(d, read=30000) for d in "bcd"))
    obs = replace(
        CALM,
        speed_kb_s=10400,
        members=members,
        array_read_kib_s=66000,
        array_write_kib_s=0,
        top_io=(ProcessIo(4242, "rsync", 65000, 0),),
    )
    found = judge(obs)
    assert list(found) == ["yielding"]
    numbers = found["yielding"]
    assert (numbers["competing_kib_s"], numbers["share"]) == (66000, round(66000 / 107600, 3))
    assert numbers["busiest"]["disk"] == "sda" and numbers["below_min"] is False
    assert text.sentence("yielding", numbers) == (
        "Held back by other I/O on the disks: 61 % of their traffic is reads from rsync "
        "(sda 92 % busy). Boost raises its floor (md stops yielding below it), or pause what "
        "competes."
    )


def test_other_partitions_of_the_member_disks_compete_too() -> None:
    obs = replace(CALM, other_partitions_kib_s={"sda": 9000.0, "sdb": 0.0})
    numbers = judge(obs)["yielding"]
    assert numbers["competing_kib_s"] == 9000 and numbers["array_read_kib_s"] == 0
    assert "27 % of their traffic is I/O from other partitions" in text.sentence(
        "yielding", numbers
    )


@pytest.mark.parametrize(
    ("read", "write"),
    [(400, 0), (3000, 2000)],  # under half a MiB/s; 5 MB/s beside a 24 MB/s sync: under a fifth
)
def test_a_little_other_io_is_not_yielding(read: float, write: float) -> None:
    assert judge(replace(CALM, array_read_kib_s=read, array_write_kib_s=write)) == {}


def test_other_io_while_held_by_the_max_is_the_max() -> None:
    obs = replace(CALM, speed_kb_s=9800, max_kb_s=10000, array_read_kib_s=50000)
    assert list(judge(obs)) == ["held_by_max"]


def test_below_the_min_pausing_is_what_helps() -> None:
    obs = replace(CALM, speed_kb_s=700, array_read_kib_s=50000, array_write_kib_s=0)
    numbers = judge(obs)["yielding"]
    assert numbers["below_min"] is True
    assert "pausing what competes" in text.todo("yielding", numbers)


def test_the_cpu_is_no_verdict_when_every_disk_is_saturated() -> None:
    # Real kernel under emulation: md0_raid5 at 0.97 of a core while all three disks were at
    # their throttle. A faster CPU would wait for the disks.
    busy = tuple(member(d, busy=0.96) for d in "abcd")
    found = judge(replace(CALM, members=busy, threads_cpu={"md2_raid5": 0.97}))
    assert list(found) == ["disks_limit"]


def test_one_slow_member() -> None:
    slow = member("sdc", busy=0.97, wait=48.0)
    obs = replace(CALM, members=(*CALM.members[:2], slow, CALM.members[3]))
    found = judge(obs)
    assert list(found) == ["slow_member"]
    assert found["slow_member"]["ratio"] == 12.0
    assert "sdc takes 48 ms per request, 12x the other disks" in text.sentence(
        "slow_member", found["slow_member"]
    )


@pytest.mark.parametrize(
    ("busy", "wait"),
    [(0.97, 9.0), (0.30, 48.0)],  # fast enough in absolute terms; slow but rarely busy
)
def test_no_slow_member(busy: float, wait: float) -> None:
    obs = replace(
        CALM, members=(*CALM.members[:2], member("sdc", busy=busy, wait=wait), CALM.members[3])
    )
    assert "slow_member" not in judge(obs)


def test_a_slow_member_that_is_not_the_busiest_is_not_it() -> None:
    members = (
        member("sda", busy=0.99, wait=5.0),
        member("sdb", busy=0.9, wait=40.0),
        *CALM.members[2:],
    )
    assert "slow_member" not in judge(replace(CALM, members=members))


def test_cpu_bound_parity() -> None:
    found = judge(replace(CALM, threads_cpu={"md2_raid5": 0.97}))
    assert list(found) == ["cpu_bound"]
    assert "md2_raid5 uses 97 % of a CPU core computing parity" in text.sentence(
        "cpu_bound", found["cpu_bound"]
    )
    assert "group_thread_cnt" in text.todo("cpu_bound", found["cpu_bound"])


def test_stripe_cache_saturated_suggests_what_fits_in_memory() -> None:
    found = judge(replace(CALM, stripe_cache_size=256, stripe_cache_active=250))
    assert list(found) == ["stripe_cache"]
    numbers = found["stripe_cache"]
    # 25 % of 4 000 000 KiB over 4 disks x 4 KiB pages: 62 500 entries, capped at md's 32768.
    assert text.stripe_cache_room(numbers) == 32768
    assert "up to 128x this one" in text.todo("stripe_cache", numbers)  # 32768 of 256 entries
    assert "stripe_cache" not in judge(replace(CALM, level="raid1", stripe_cache_active=4096))


def test_stripe_cache_saturated_without_room_says_so() -> None:
    numbers = judge(replace(CALM, stripe_cache_active=4000, mem_available_kib=60_000))[
        "stripe_cache"
    ]
    assert "no free memory" in text.todo("stripe_cache", numbers)


def test_at_the_disks_limit() -> None:
    obs = replace(CALM, members=tuple(member(d, busy=0.95 + i / 100) for i, d in enumerate("abcd")))
    found = judge(obs)
    assert list(found) == ["disks_limit"]
    assert "every member is 95 % to 98 % busy" in text.sentence("disks_limit", found["disks_limit"])
    three_of_four = replace(obs, members=(*obs.members[:3], member("sdd", busy=0.6)))
    assert "disks_limit" not in judge(three_of_four)


def test_no_members_yet_no_disk_verdicts() -> None:
    assert judge(replace(CALM, members=(), speed_kb_s=None)) == {}


def test_every_verdict_has_words() -> None:
    assert set(text.TITLES) == set(VERDICTS)
