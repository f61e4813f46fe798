"""Rates over the diagnosis window, from two diskstats readings."""

from app.diagnosis.window import Counters, kib_s, member_io
from app.md.disks import DiskStat


def stat(sectors_read: int, sectors_written: int, io_ticks_ms: int, requests: int) -> DiskStat:
    return DiskStat(
        reads_completed=requests,
        sectors_read=sectors_read,
        writes_completed=0,
        sectors_written=sectors_written,
        io_ticks_ms=io_ticks_ms,
        read_ms=requests * 4,
    )


def test_member_io_is_rates_over_the_span() -> None:
    base = Counters(0.0, {"sda": stat(0, 0, 0, 0)}, {})
    point = Counters(10.0, {"sda": stat(20480, 2048, 5000, 100)}, {})
    io = member_io("sda1", "sda", base, point, 10.0)
    assert io is not None
    assert (io.member, io.disk) == ("sda1", "sda")
    assert io.busy == 0.5
    assert (io.read_kib_s, io.write_kib_s) == (1024.0, 102.4)
    assert io.ios_s == 10.0
    assert io.wait_ms == 4.0


def test_a_disk_missing_from_either_reading_has_no_rates() -> None:
    base = Counters(0.0, {}, {})
    point = Counters(10.0, {"sda": stat(10, 10, 10, 1)}, {})
    assert member_io("sda1", "sda", base, point, 10.0) is None
    assert kib_s(base, point, "sda", 10.0) == 0.0


def test_busy_is_capped_at_one() -> None:
    base = Counters(0.0, {"sda": stat(0, 0, 0, 0)}, {})
    point = Counters(1.0, {"sda": stat(0, 0, 1500, 0)}, {})
    io = member_io("sda", "sda", base, point, 1.0)
    assert io is not None and io.busy == 1.0
