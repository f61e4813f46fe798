"""Parsers for /proc/PID/stat, /proc/PID/io and /proc/diskstats: real text, then hostile text."""

from pathlib import Path

import pytest

from app.kernel import procfs, sysfs
from app.kernel.host import Host
from tests.kernel_tree import KernelTree, md_thread

# Captured on Linux 6.1 (tests/fixtures/kernel/*/proc, realkernel diagnosis scenarios) and 6.18.
KTHREADD = (
    "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 24 0 0 18446744073709551615 0 0 0 0"
    " 0 0 0 2147483647 0 1 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
)
PROC_IO = (
    "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\nread_bytes: 4096\n"
    "write_bytes: 323932160\ncancelled_write_bytes: 0\n"
)
DISKSTATS_6_1 = (
    " 254       0 vda 3391 0 1054272 2811 2964 0 1049600 39614 0 14108 42426 0 0 0 0 0 0\n"
    "   9       0 md0 1234 0 9872 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
)


def test_stat_of_a_kernel_thread() -> None:
    stat = procfs.parse_pid_stat(KTHREADD)
    assert (stat.comm, stat.state, stat.utime_ticks, stat.stime_ticks) == ("kthreadd", "S", 0, 0)


def test_stat_comm_may_hold_spaces_and_parentheses() -> None:
    text = "77 (a (b) c) R 1 1 1 0 -1 0 0 0 0 0 12 34 0 0 20 0 1 0 5 0 0\n"
    stat = procfs.parse_pid_stat(text)
    assert (stat.comm, stat.state, stat.cpu_ticks) == ("a (b) c", "R", 46)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "77 no comm here 1 2 3",
        "77 (x) R 1 2",
        "77 (x) R 1 1 1 0 -1 0 0 0 0 0 ab 34 0 0",
        "\0\0",
    ],
)
def test_hostile_stat_fails_cleanly(text: str) -> None:
    with pytest.raises(ValueError, match="/proc/PID/stat"):
        procfs.parse_pid_stat(text)


def test_io_counts_storage_bytes_not_characters() -> None:
    assert procfs.parse_pid_io(PROC_IO) == procfs.PidIo(read_bytes=4096, write_bytes=323932160)


@pytest.mark.parametrize("text", ["", "rchar: 1\n", "read_bytes: 1\nwrite_bytes: x\n"])
def test_hostile_io_fails_cleanly(text: str) -> None:
    with pytest.raises(ValueError, match="/proc/PID/io"):
        procfs.parse_pid_io(text)


def test_diskstats_fields_by_position() -> None:
    stats = sysfs.parse_diskstats(DISKSTATS_6_1)
    assert stats["vda"] == sysfs.DiskStat(
        reads_completed=3391,
        sectors_read=1054272,
        writes_completed=2964,
        sectors_written=1049600,
        io_ticks_ms=14108,
        read_ms=2811,
        write_ms=39614,
        in_flight=0,
    )
    assert stats["md0"].sectors_read == 9872


def test_diskstats_skips_short_or_garbled_lines_only() -> None:
    text = "8 0 sda 1 2\n8 16 sdb x 0 0 0 0 0 0 0 0 0 0\n" + DISKSTATS_6_1
    assert sorted(sysfs.parse_diskstats(text)) == ["md0", "vda"]


def test_host_reads_processes_in_the_tree(tmp_path: Path) -> None:
    tree = KernelTree(tmp_path)
    md_thread(tree, 412, "md2_raid5", 900)
    tree.write("proc/412/io", PROC_IO)
    tree.write("proc/99/comm", "broken")
    tree.write("proc/99/stat", "garbage")
    host = Host(tree.proc, tree.sys)
    assert host.pids() == [99, 412]
    assert host.read_pid_comm(412) == "md2_raid5"
    stat = host.read_pid_stat(412)
    assert stat is not None and stat.cpu_ticks == 900
    assert host.read_pid_stat(99) is None  # unparsable: as if gone
    assert host.read_pid_stat(5) is None  # gone
    assert host.read_pid_io(99) is None
    io = host.read_pid_io(412)
    assert io is not None and io.write_bytes == 323932160
