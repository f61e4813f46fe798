"""The disks under md's arrays: a member's disk as sysfs describes it, and one line of
/proc/diskstats with what two readings of it say (plain frozen values; app/kernel reads them)."""

from dataclasses import dataclass

SECTOR_KIB = 0.5  # /proc/diskstats counts 512-byte sectors


@dataclass(frozen=True)
class DiskStat:
    """One line of /proc/diskstats: counters since boot, so only their deltas mean anything."""

    reads_completed: int
    sectors_read: int  # 512-byte sectors
    writes_completed: int
    sectors_written: int  # 512-byte sectors
    io_ticks_ms: int  # time spent doing I/O
    read_ms: int = 0  # time all reads took, summed over requests (field 7 of iostats.rst)
    write_ms: int = 0  # time all writes took, summed (field 11)
    in_flight: int = 0  # requests issued and not yet completed


@dataclass(frozen=True)
class MemberDisk:
    """The disk under one md member, as /sys/block/<disk> describes it."""

    disk: str  # the whole disk's kernel name: "sda" for member sda5, "sata1" for sata1p5
    size_kib: int | None  # /sys/block/<disk>/size (512-byte sectors) in 1 KiB blocks
    model: str | None  # /sys/block/<disk>/device/model, e.g. "WDC WD40EFRX-68N"


def waited_ms_per_request(before: DiskStat, after: DiskStat) -> tuple[int, float | None]:
    """Requests completed between two readings, and how long each took on average (ms; None
    when none completed). On an md device these are the box's own requests, not md's sync."""
    completed = (
        after.reads_completed
        + after.writes_completed
        - before.reads_completed
        - before.writes_completed
    )
    waited = after.read_ms + after.write_ms - before.read_ms - before.write_ms
    return completed, (waited / completed if completed > 0 else None)
