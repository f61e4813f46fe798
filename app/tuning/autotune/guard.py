"""When an auto-tune sweep must stop: someone else's apply or revert (it wins, nothing is
touched), or RAM under the floor or the box's own I/O starving (the values found go back)."""

from dataclasses import dataclass

from app.config import Settings
from app.diagnosis.rules import competing_io
from app.diagnosis.thresholds import threshold
from app.live.tick import Tick
from app.md.disks import SECTOR_KIB, DiskStat, waited_ms_per_request
from app.store import db, journal


@dataclass
class OwnOps:
    """The journal's ops the sweep wrote itself, and the newest op it has looked at."""

    last_seen: int
    ids: set[int]

    def add(self, op_id: int) -> None:
        self.ids.add(op_id)
        self.last_seen = max(self.last_seen, op_id)


def someone_else(conn: db.Connection, ops: OwnOps) -> str | None:
    """Why the sweep must stop without touching anything: an apply or revert it did not write."""
    newer = journal.ops_after(conn, ops.last_seen)
    for op in newer:
        if op.id not in ops.ids:
            if op.kind == "revert":
                return f"reverted during the sweep ({op.error or 'requested'})"
            return f"{op.preset} was applied during the sweep (by hand or a schedule): it wins"
    ops.last_seen = max([ops.last_seen, *(op.id for op in newer)])
    return None


def other_io_seen(tick: Tick, array: str) -> bool:
    """Whether the tick saw I/O on the array's disks that is not the sync (True when it could not
    tell). A disk-bound sync that runs near the min limit with no such I/O is not held there:
    on the real kernel a reshape under DSM's min of 10000 KiB/s ran at ~9 MB/s all alone."""
    diagnosis = tick.diagnoses.get(array)
    if diagnosis is None or not diagnosis.observation.members:
        return True
    return competing_io(diagnosis.observation) is not None


def low_memory(tick: Tick, settings: Settings) -> str | None:
    available = tick.mem_available_kib
    if available is not None and available / 1024 < settings.autotune_mem_floor_mb:
        return (
            f"MemAvailable fell to {available / 1024:.0f} MiB, under the floor of "
            f"{settings.autotune_mem_floor_mb:.0f} MiB"
        )
    return None


@dataclass
class OwnIo:
    """The array's own I/O (its /proc/diskstats line: the box's requests, not md's sync) since
    the step began, to tell when the box starves."""

    since: float | None = None
    before: DiskStat | None = None
    latest: tuple[float, DiskStat] | None = None

    def shift(self, delta: float) -> None:
        if self.since is not None:
            self.since += delta
        if self.latest is not None:
            self.latest = (self.latest[0] + delta, self.latest[1])

    def reset(self) -> None:
        self.since, self.before, self.latest = None, None, None

    def kb_s(self) -> float | None:
        """The box's own reads and writes on the array since the step began, KiB/s."""
        if self.since is None or self.before is None or self.latest is None:
            return None
        now, io = self.latest
        if now <= self.since:
            return None
        sectors = io.sectors_read + io.sectors_written
        sectors -= self.before.sectors_read + self.before.sectors_written
        return max(sectors, 0) * SECTOR_KIB / (now - self.since)

    def starving(self, tick: Tick, array: str, now: float, limit_ms: float) -> str | None:
        io = tick.diskstats.get(array)
        if io is None:
            return None
        if self.since is None or self.before is None:
            self.since, self.before = now, io
            return None
        self.latest = (now, io)
        completed, waited_ms = waited_ms_per_request(self.before, io)
        if waited_ms is not None and waited_ms > limit_ms:
            return (
                f"the box's own requests on {array} waited {waited_ms / 1000:.1f} s on average "
                f"(more than {limit_ms / 1000:g} s): its I/O is starving"
            )
        stuck = completed <= 0 and io.in_flight > 0 and self.before.in_flight > 0
        if stuck and (now - self.since) * 1000 > limit_ms:
            return (
                f"none of the box's own requests on {array} finished for "
                f"{now - self.since:.0f} s: its I/O is starving"
            )
        return None


def unread(kib_s: float | None) -> bool:
    """Reads from an array this slow (KiB/s) are nobody's: under the diagnosis's floor for other
    I/O (half a MiB/s: a disk's housekeeping). False when not known."""
    return kib_s is not None and kib_s < threshold("other_io_kib_s")


@dataclass
class ArrayReads:
    """Reads on the array's own device (its users', not md's sync) since the sweep began: md's
    sync reads the members directly, so the md device's read-ahead serves only these."""

    first: tuple[float, int] | None = None  # (ts, sectors read)
    latest: tuple[float, int] | None = None

    def add(self, tick: Tick, array: str) -> None:
        io = tick.diskstats.get(array)
        if io is None or tick.ts is None:
            return
        if self.first is None:
            self.first = (tick.ts, io.sectors_read)
        self.latest = (tick.ts, io.sectors_read)

    def shift(self, delta: float) -> None:
        if self.first is not None:
            self.first = (self.first[0] + delta, self.first[1])
        if self.latest is not None:
            self.latest = (self.latest[0] + delta, self.latest[1])

    def nobody_reads(self) -> float | None:
        """KiB/s read from the array since the sweep began, when under the diagnosis's floor for
        other I/O (half a MiB/s: a disk's housekeeping); None when someone reads, or it cannot
        be told (no diskstats line, or a single tick)."""
        if self.first is None or self.latest is None or self.latest[0] <= self.first[0]:
            return None
        kib_s = max(self.latest[1] - self.first[1], 0) * SECTOR_KIB
        kib_s /= self.latest[0] - self.first[0]
        return kib_s if unread(kib_s) else None
