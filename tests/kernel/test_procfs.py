"""Parsers for /proc/PID/stat and /proc/PID/io: real text, then hostile text."""

import pytest

from app.kernel import procfs
from tests import PROJECT_ROOT

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
