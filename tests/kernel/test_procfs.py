"""Parsers for /proc/PID/stat, /proc/PID/io and /proc/diskstats: real text, then hostile text."""

from pathlib import Path

import pytest

from app.kernel import procfs, sysfs
from app.kernel.host import Host
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, md_thread

# Captured on Debian's 6.1 in QEMU during a check (tests/fixtures/diagnosis, realkernel suite);
# /proc/PID/io from this machine's 6.18 (md threads have none worth reading).
CAPTURED = PROJECT_ROOT / "tests" / "fixtures" / "diagnosis" / "held_by_max" / "t0" / "proc"
PROC_IO = (
    "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\nread_bytes: 4096\n"
    "write_bytes: 323932160\ncancelled_write_bytes: 0\n"
)


def test_stat_of_md_s_parity_thread() -> None:
    stat = procfs.parse_pid_stat((CAPTURED / "130" / "stat").read_text())
    assert (stat.comm, stat.state, stat.utime_ticks, stat.stime_ticks) == ("md0_raid5", "S", 0, 535)


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
    stats = sysfs.parse_diskstats((CAPTURED / "diskstats").read_text())
    # " 254      64 vde 401 41047 333528 5388 3 0 8 2 0 4176 5393 0 0 0 0 2 1"
    assert stats["vde"] == sysfs.DiskStat(
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


def test_diskstats_of_a_few_devices_only() -> None:
    text = (CAPTURED / "diskstats").read_text()
    assert sorted(sysfs.parse_diskstats(text, {"vde", "md0", "sdz"})) == ["md0", "vde"]
    assert sysfs.parse_diskstats(text, {"vde"})["vde"] == sysfs.parse_diskstats(text)["vde"]
