"""Who competes with a sync: md's own threads, and the busiest other processes by /proc/PID/io."""

import re

from app.diagnosis.rules import ProcessIo
from app.kernel.host import Host

# Read every /proc/PID/io at most this often, and only while other I/O competes: ~15 us per
# process, so a NAS with 400 processes pays ~6 ms a scan, ~1 ms a tick at 5 s ticks.
IO_SCAN_S = 30.0
TOP_PROCESSES = 3
TOP_MIN_KIB_S = 64.0  # a process moving less than this is not what competes
MD_THREAD = re.compile(r"^md\d+_")  # md's own threads: the sync's I/O, not competition


class IoScan:
    """The busiest processes other than md's threads, from two scans of every /proc/PID/io."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.seen: tuple[float, dict[int, tuple[int, int]]] | None = None
        self.top: tuple[float, tuple[ProcessIo, ...]] | None = None

    def shift(self, delta: float) -> None:
        """The wall clock stepped by `delta` s: the last scans' times move with it."""
        if self.seen is not None:
            self.seen = (self.seen[0] + delta, self.seen[1])
        if self.top is not None:
            self.top = (self.top[0] + delta, self.top[1])

    def forget(self) -> None:
        """Nothing competes any more: the next scan starts afresh."""
        self.seen = self.top = None

    def busiest(self) -> tuple[ProcessIo, ...]:
        return self.top[1] if self.top is not None else ()

    def scan(self, now: float) -> None:
        """Rates of every readable /proc/PID/io since the previous scan: who competes."""
        if self.seen is not None and now - self.seen[0] < IO_SCAN_S:
            return
        seen: dict[int, tuple[int, int]] = {}
        for pid in self.host.pids():
            io = self.host.read_pid_io(pid)
            if io is not None:
                seen[pid] = (io.read_bytes, io.write_bytes)
        before = self.seen
        self.seen = (now, seen)
        if before is None or now <= before[0]:
            return
        span = now - before[0]
        rates = []
        for pid, (read, written) in seen.items():
            if pid not in before[1]:
                continue
            old_read, old_written = before[1][pid]
            read_kib_s = (read - old_read) / 1024 / span
            write_kib_s = (written - old_written) / 1024 / span
            if read_kib_s + write_kib_s >= TOP_MIN_KIB_S:
                rates.append((read_kib_s + write_kib_s, pid, read_kib_s, write_kib_s))
        top = []
        for _, pid, read_kib_s, write_kib_s in sorted(rates, reverse=True):
            comm = self.host.read_pid_comm(pid)
            if comm is None or MD_THREAD.match(comm):
                continue
            top.append(ProcessIo(pid, comm, read_kib_s, write_kib_s))
            if len(top) == TOP_PROCESSES:
                break
        self.top = (now, tuple(top))
