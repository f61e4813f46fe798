"""Guest side of scripts/bench_realkernel.py: RAID5 3->4 reshapes, DSM-like defaults vs boost.

Runs as root in the VM on HDD-like throttled disks. Each trial builds a fresh 3-disk RAID5 (64 KiB
chunks, --assume-clean), sets DSM-like knobs, starts a competing reader on the array (O_DIRECT,
like a user streaming a file), grows it to 4 disks and times the reshape. "boost" trials press
mdboost's boost toggle over HTTP right after the grow starts, as a user would; the server's
revert-on-finish puts the knobs back before the next trial. Trials alternate (A B A B).
"""

import json
import mmap
import os
import threading
import time
from pathlib import Path

from api_scenarios import Server, api
from mdguest import (
    DISKS,
    OUT,
    main,
    md_path,
    read,
    record,
    say,
    set_speed_limits,
    sh,
    stop_all,
    wait_for,
    wait_idle,
    wipe,
)

PAIRS = int(os.environ.get("PAIRS", "2"))
# DSM-like defaults: stripe cache 256, min 10000, max 200000, read-ahead 384 KiB.
DSM_LIMITS = (10000, 200000)
CHUNK_KB = os.environ.get("CHUNK_KB", "64")  # DSM's; mdadm's own default is 512
# The array the benches grow: RAID5 3->4 unless told (the seed that swept stripe caches by hand
# grew a RAID6 6->8).
LEVEL = int(os.environ.get("LEVEL", "5"))
MEMBERS = int(os.environ.get("MEMBERS", "3"))
GROW_TO = int(os.environ.get("GROW_TO", "4"))
PARITY = {5: 1, 6: 2}[LEVEL]
# Share of a grow after which it only writes: old data disks / new data disks.
KNEE = (MEMBERS - PARITY) / (GROW_TO - PARITY)
DSM_STRIPE_CACHE = "256"
DSM_READ_AHEAD_KB = "384"


class Reader(threading.Thread):
    """Reads the array front to back, again and again, bypassing the page cache; with `duty`
    (on, period) in seconds, only `on` seconds of every `period` (Plex, an indexer, a backup)."""

    def __init__(self, device: str, duty: tuple[float, float] | None = None) -> None:
        super().__init__(daemon=True)
        self.device = device
        self.duty = duty
        self.bytes = 0
        self.stop = threading.Event()

    def reading(self, started: float) -> bool:
        """Whether this moment is in the reading part of the duty cycle (wait out the rest)."""
        if self.duty is None:
            return True
        on, period = self.duty
        into = (time.monotonic() - started) % period
        if into < on:
            return True
        self.stop.wait(period - into)
        return False

    def run(self) -> None:
        fd = os.open(self.device, os.O_RDONLY | os.O_DIRECT)
        buffer = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT needs
        started = time.monotonic()
        try:
            while not self.stop.is_set():
                if not self.reading(started):
                    continue
                got = os.readv(fd, [buffer])
                if got <= 0:
                    os.lseek(fd, 0, os.SEEK_SET)
                self.bytes += max(got, 0)
        finally:
            os.close(fd)


def dsm_array_with_a_new_disk() -> None:
    """A fresh md0 of LEVEL over MEMBERS disks (RAID5 over 3 unless told; CHUNK_KB chunks) with
    DSM-like knobs, and the disks up to GROW_TO (a 4th unless told) added as spares."""
    stop_all()
    members = DISKS[:GROW_TO]
    wipe(members)
    set_speed_limits(*DSM_LIMITS)
    sh("mdadm", "--create", "/dev/md0", "--run", f"--level={LEVEL}", f"--raid-devices={MEMBERS}",
       f"--chunk={CHUNK_KB}", "--assume-clean", *members[:MEMBERS])  # fmt: skip
    md_path("md0", "stripe_cache_size").write_text(DSM_STRIPE_CACHE + "\n")
    Path("/sys/block/md0/queue/read_ahead_kb").write_text(DSM_READ_AHEAD_KB + "\n")
    for spare in members[MEMBERS:]:
        sh("mdadm", "/dev/md0", "--add", spare)


def trial(kind: str, number: int) -> dict[str, object]:
    dsm_array_with_a_new_disk()
    reader = Reader("/dev/md0")
    reader.start()
    started = time.monotonic()
    sh("mdadm", "--grow", "/dev/md0", f"--raid-devices={GROW_TO}")
    cache_at_grow = read(md_path("md0", "stripe_cache_size"))
    if kind == "boost":
        api("POST", "/api/boost", {"on": True})
    cache_during = read(md_path("md0", "stripe_cache_size"))
    wait_idle("md0", 1800)
    seconds = time.monotonic() - started
    reader.stop.set()
    reader.join()
    per_device_kib = int(Path("/sys/block/md0/md/component_size").read_text())
    if kind == "boost":  # mdboost reverts by itself when the reshape ends
        wait_for(lambda: not api("GET", "/api/tuning")["active"], "boost to revert", 60, 0.5)
    result = {
        "trial": number,
        "kind": kind,
        "seconds": round(seconds, 1),
        "per_device_mib": per_device_kib / 1024,
        "reshape_mb_s": round(per_device_kib * 1024 / seconds / 1e6, 2),
        "reader_mb_s": round(reader.bytes / seconds / 1e6, 2),
        "stripe_cache_at_grow": cache_at_grow,
        "stripe_cache_during": cache_during,
        "stripe_cache_after": read(md_path("md0", "stripe_cache_size")),
    }
    say(json.dumps(result))
    return result


def scenario() -> None:
    Path("/tmp/mdboost").mkdir(exist_ok=True)
    server = Server()
    server.start()
    results = []
    try:
        for _ in range(PAIRS):
            for kind in ("dsm", "boost"):
                results.append(trial(kind, len(results) + 1))
                record("trials", results)
    finally:
        server.stop()
    (OUT / "bench.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(scenario)
