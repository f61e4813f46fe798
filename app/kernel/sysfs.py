"""Pure parsers for the small /sys and /proc files beside mdstat (admin-guide/md.rst)."""

from collections.abc import Collection

from app.md.disks import DiskStat

MODEL_CHARS = 64  # SCSI models are 16 characters, NVMe's 40


def parse_model(text: str | None) -> str | None:
    """A disk's model as sysfs prints it (padded with spaces); None when empty or unprintable."""
    model = " ".join((text or "").split())[:MODEL_CHARS]
    return model if model and model.isprintable() else None


def parse_int(text: str | None) -> int | None:
    """An integer attribute ("256\\n"); None when missing or not a number."""
    if text is None:
        return None
    try:
        return int(text.split()[0])
    except (ValueError, IndexError):
        return None


def parse_uptime(text: str) -> float | None:
    """/proc/uptime is "seconds-up seconds-idle" ("350735.47 234388.90"); None if malformed."""
    try:
        seconds = float(text.split()[0])
    except (ValueError, IndexError):
        return None
    return seconds if seconds >= 0 and seconds == seconds else None


def parse_sync_completed(text: str | None) -> tuple[int, int] | None:
    """sync_completed is "done / total" in 512-byte sectors, or "none" when idle."""
    if text is None:
        return None
    parts = text.replace(" ", "").strip().split("/")
    if len(parts) != 2:
        return None
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        return None


def parse_raid_disks(text: str | None) -> tuple[int, int | None] | None:
    """raid_disks reads "4", or "4 (3)" (new, old) while a reshape changes the count."""
    if text is None:
        return None
    words = text.replace("(", " ").replace(")", " ").split()
    try:
        new = int(words[0])
        old = int(words[1]) if len(words) > 1 else None
    except (ValueError, IndexError):
        return None
    return new, old


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as {"MemAvailable": kib, ...}."""
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            values[name.strip()] = int(words[0])
    return values


def parse_diskstats(text: str, names: Collection[str] | None = None) -> dict[str, DiskStat]:
    """/proc/diskstats (Documentation/admin-guide/iostats.rst) keyed by device name; only the
    devices in `names` when given (a NAS lists dozens; the sampler wants a few each tick).

    Fields after major, minor, name: reads, merged, sectors, ms reading, writes, merged,
    sectors, ms writing, in flight, ms doing I/O, weighted ms (kernels >= 4.18 append discard
    and flush fields, ignored). A line too short or not numeric is skipped."""
    stats = {}
    for line in text.splitlines():
        if names is not None:
            head = line.split(None, 3)
            if len(head) < 3 or head[2] not in names:
                continue
        fields = line.split()
        if len(fields) < 14:
            continue
        try:
            stats[fields[2]] = DiskStat(
                reads_completed=int(fields[3]),
                sectors_read=int(fields[5]),
                writes_completed=int(fields[7]),
                sectors_written=int(fields[9]),
                io_ticks_ms=int(fields[12]),
                read_ms=int(fields[6]),
                write_ms=int(fields[10]),
                in_flight=int(fields[11]),
            )
        except ValueError:
            continue
    return stats
