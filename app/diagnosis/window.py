"""Rates over the diagnosis window from two readings of /proc/diskstats (pure)."""

from dataclasses import dataclass

from app.diagnosis.rules import MemberIo
from app.md.disks import SECTOR_KIB, DiskStat, waited_ms_per_request


@dataclass
class Counters:
    """One tick's counters: diskstats per device and the md threads' CPU ticks."""

    ts: float
    disks: dict[str, DiskStat]
    thread_ticks: dict[str, int]  # md thread name -> utime + stime


def member_io(
    member: str, disk: str, base: Counters, point: Counters, span: float
) -> MemberIo | None:
    """A member's busy share, throughput, requests and wait over the window; None if unlisted."""
    if disk not in base.disks or disk not in point.disks:
        return None
    a, b = base.disks[disk], point.disks[disk]
    ios, wait_ms = waited_ms_per_request(a, b)
    return MemberIo(
        member=member,
        disk=disk,
        busy=min(max((b.io_ticks_ms - a.io_ticks_ms) / 1000 / span, 0.0), 1.0),
        read_kib_s=(b.sectors_read - a.sectors_read) * SECTOR_KIB / span,
        write_kib_s=(b.sectors_written - a.sectors_written) * SECTOR_KIB / span,
        ios_s=ios / span,
        wait_ms=wait_ms,
    )


def kib_s(base: Counters, point: Counters, device: str, span: float) -> float:
    """KiB/s read and written by one device over the window; 0 when it is not in diskstats."""
    if device not in base.disks or device not in point.disks:
        return 0.0
    a, b = base.disks[device], point.disks[device]
    return (
        (b.sectors_read - a.sectors_read + b.sectors_written - a.sectors_written)
        * SECTOR_KIB
        / span
    )
