"""Parsers for md's sysfs attributes, /proc/meminfo and /proc/diskstats: real text, then hostile."""

import pytest

from app.kernel import sysfs
from app.md.attributes import SpeedLimit, parse_speed_limit
from app.md.disks import DiskStat, waited_ms_per_request
from tests import PROJECT_ROOT

# Captured on Debian's 6.1 in QEMU during a check (tests/fixtures/diagnosis, realkernel suite).
CAPTURED = PROJECT_ROOT / "tests" / "fixtures" / "diagnosis" / "held_by_max" / "t0" / "proc"


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("1000 (system)\n", SpeedLimit(1000, "system")),
        ("50000 (local)\n", SpeedLimit(50000, "local")),
        ("200000\n", SpeedLimit(200000, "local")),
        ("", None),
        ("fast (local)", None),
        (None, None),
    ],
)
def test_speed_limits_say_whose_they_are(text: str | None, limit: SpeedLimit | None) -> None:
    assert parse_speed_limit(text) == limit


@pytest.mark.parametrize(
    ("text", "done_total"),
    [("1024 / 8192\n", (1024, 8192)), ("none\n", None), ("1/2/3", None), ("a / b", None)],
)
def test_sync_completed_is_done_over_total_or_none(
    text: str, done_total: tuple[int, int] | None
) -> None:
    assert sysfs.parse_sync_completed(text) == done_total


@pytest.mark.parametrize(
    ("text", "disks"), [("4\n", (4, None)), ("4 (3)\n", (4, 3)), ("", None), ("x (3)", None)]
)
def test_raid_disks_during_a_reshape_are_new_and_old(
    text: str, disks: tuple[int, int | None] | None
) -> None:
    assert sysfs.parse_raid_disks(text) == disks


@pytest.mark.parametrize(("text", "value"), [("256\n", 256), ("", None), ("x", None), (None, None)])
def test_an_integer_attribute_or_none(text: str | None, value: int | None) -> None:
    assert sysfs.parse_int(text) == value


def test_meminfo_in_kib_skipping_what_is_not_a_number() -> None:
    text = "MemTotal:  2000000 kB\nMemAvailable: 163840 kB\nHugePages_Total: x\nnonsense\n"
    assert sysfs.parse_meminfo(text) == {"MemTotal": 2000000, "MemAvailable": 163840}


def test_the_wait_per_request_between_two_readings() -> None:
    before = DiskStat(10, 0, 10, 0, 0, read_ms=100, write_ms=100)
    after = DiskStat(20, 0, 30, 0, 0, read_ms=200, write_ms=500)
    assert waited_ms_per_request(before, after) == (30, 500 / 30)
    assert waited_ms_per_request(after, after) == (0, None)


def test_diskstats_fields_by_position() -> None:
    stats = sysfs.parse_diskstats((CAPTURED / "diskstats").read_text())
    # " 254      64 vde 401 41047 333528 5388 3 0 8 2 0 4176 5393 0 0 0 0 2 1"
    assert stats["vde"] == DiskStat(
        reads_completed=401,
        sectors_read=333528,
        writes_completed=3,
        sectors_written=8,
        io_ticks_ms=4176,
        read_ms=5388,
        write_ms=2,
        in_flight=0,
    )
    assert stats["md0"].sectors_read == 24


def test_diskstats_skips_short_or_garbled_lines_only() -> None:
    text = "8 0 sda 1 2\n8 16 sdb x 0 0 0 0 0 0 0 0 0 0\n 9 0 md0 3 0 24 0 0 0 0 0 0 0 0\n"
    assert sorted(sysfs.parse_diskstats(text)) == ["md0"]


def test_diskstats_of_a_few_devices_only() -> None:
    text = (CAPTURED / "diskstats").read_text()
    assert sorted(sysfs.parse_diskstats(text, {"vde", "md0", "sdz"})) == ["md0", "vde"]
    assert sysfs.parse_diskstats(text, {"vde"})["vde"] == sysfs.parse_diskstats(text)["vde"]


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("350735.47 234388.90\n", 350735.47),
        ("12 30\n", 12.0),
        ("", None),
        ("up 3 days\n", None),
        ("-5.0 1.0\n", None),
        ("nan 1.0\n", None),
    ],
)
def test_uptime(text: str, seconds: float | None) -> None:
    assert sysfs.parse_uptime(text) == seconds
