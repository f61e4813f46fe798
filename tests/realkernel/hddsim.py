"""A hard disk for the QEMU harness: an NBD server that answers as slowly as a spinning disk would.

QEMU's own throttle (bps + iops) charges every request the same, wherever it lands. A real disk's
cost is its head's travel: a request right after the last one costs only its transfer, one across
the platter costs a seek and half a turn. A reshape reads the old layout and writes the new one at
two places on every member, so on a real disk its speed is set by how many stripes md keeps in
flight between head moves, which is what stripe_cache_size decides (the seeds: 6 MB/s at 256,
29 MB/s at 16384 on the same disks). This server serves each disk image over NBD (newstyle,
fixed handshake, simple replies) and holds every answer for the time the mechanics below say,
one request at a time per disk, nearest first among those queued (as a disk's command queue
does; the oldest goes first once it has waited a second).

    python3 hddsim.py [--media OUTER-INNER] SOCKET NAME=IMAGE [NAME=IMAGE ...]

--media 250-150: a NAS disk's zoned media rate in MB/s, the outer edge's first (a 7200 rpm
3.5" disk of today: 250 at the start of the disk, 150 at its end); without it, a flat 60 MB/s.

QEMU attaches one with -blockdev driver=nbd,server.type=unix,server.path=SOCKET,export=NAME.
"""

import asyncio
import contextlib
import math
import os
import signal
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

NBDMAGIC = b"NBDMAGIC"
IHAVEOPT = 0x49484156454F5054
OPT_REPLY_MAGIC = 0x3E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2
TRANSMISSION_FLAGS = 1 | 4  # HAS_FLAGS, SEND_FLUSH
OPT_EXPORT_NAME, OPT_ABORT, OPT_INFO, OPT_GO = 1, 2, 6, 7
REP_ACK, REP_INFO = 1, 3
REP_ERR_UNSUP, REP_ERR_UNKNOWN = 2**31 + 1, 2**31 + 6
CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH = 0, 1, 2, 3
EINVAL = 22
STARVED_S = 1.0


@dataclass(frozen=True)
class Mechanics:
    """A 7200 rpm disk with its write cache off, its media rate scaled to what TCG can feed, or
    (inner_rate_bytes_s set) a NAS disk's zoned rate: outer tracks hold more sectors per turn,
    so the rate falls linearly from rate_bytes_s at the disk's start to the inner rate at its end."""

    rate_bytes_s: float = 60e6
    rpm: int = 7200
    seek_min_s: float = 0.001  # track to track
    seek_max_s: float = 0.015  # full stroke
    inner_rate_bytes_s: float | None = None

    def rate_at(self, offset: int, capacity: int) -> float:
        """Bytes per second under the head at byte `offset`."""
        if self.inner_rate_bytes_s is None:
            return self.rate_bytes_s
        share = min(max(offset / capacity, 0.0), 1.0)
        return self.rate_bytes_s + (self.inner_rate_bytes_s - self.rate_bytes_s) * share

    def service_s(self, head: int, offset: int, length: int, capacity: int) -> float:
        """Seconds one request takes with the head at byte `head`."""
        rate = self.rate_at(offset, capacity)
        transfer = length / rate
        gap = offset - head
        if gap == 0:
            return transfer
        travel = math.sqrt(min(abs(gap) / capacity, 1.0))
        seek = self.seek_min_s + (self.seek_max_s - self.seek_min_s) * travel + 30 / self.rpm
        if gap > 0:  # a short skip forward is cheaper as waiting for the platter to turn past it
            return min(gap / rate, seek) + transfer
        return seek + transfer


def nas_disk(outer_mb_s: float, inner_mb_s: float) -> Mechanics:
    """A 7200 rpm NAS disk (seeks of 1 ms track to track, 15 ms full stroke, half a turn 4.2 ms)
    with a zoned media rate, MB/s at the outer and the inner edge."""
    return Mechanics(rate_bytes_s=outer_mb_s * 1e6, inner_rate_bytes_s=inner_mb_s * 1e6)


@dataclass
class Request:
    handle: int
    command: int
    offset: int
    length: int
    data: bytes
    arrived: float
    answer: Callable[[int, int, bytes], None]


@dataclass
class Disk:
    """One image, one head, one queue of requests waiting for it."""

    image: Path
    capacity: int
    mechanics: Mechanics = field(default_factory=Mechanics)
    head: int = 0
    busy_s: float = 0.0
    requests: int = 0
    moved_bytes: int = 0
    queued_sum: int = 0  # requests waiting, summed over the requests served (mean queue depth)
    queue: list[Request] = field(default_factory=list)
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def next_request(self, now: float) -> Request:
        oldest = min(self.queue, key=lambda r: r.arrived)
        if now - oldest.arrived >= STARVED_S:
            chosen = oldest
        else:
            chosen = min(
                self.queue,
                key=lambda r: self.mechanics.service_s(
                    self.head, r.offset, r.length, self.capacity
                ),
            )
        self.queue.remove(chosen)
        return chosen

    async def serve(self) -> None:
        fd = os.open(self.image, os.O_RDWR)
        free_at = time.monotonic()
        while True:
            while not self.queue:
                self.wake.clear()
                await self.wake.wait()
            now = time.monotonic()
            request = self.next_request(now)
            cost = self.mechanics.service_s(
                self.head, request.offset, request.length, self.capacity
            )
            # The disk's own clock: a request that waited starts when the one before it ended,
            # even when this loop woke late, so the event loop's lag is never lost disk time.
            free_at = max(request.arrived, free_at) + cost
            self.busy_s += cost
            self.requests += 1
            self.moved_bytes += request.length
            self.queued_sum += len(self.queue) + 1
            await asyncio.sleep(max(0.0, free_at - time.monotonic()))
            if request.command == CMD_READ:
                data = os.pread(fd, request.length, request.offset)
                request.answer(request.handle, 0, data.ljust(request.length, b"\0"))
            else:
                os.pwrite(fd, request.data, request.offset)
                request.answer(request.handle, 0, b"")
            self.head = request.offset + request.length


async def _option_reply(writer: asyncio.StreamWriter, option: int, kind: int, data: bytes) -> None:
    writer.write(struct.pack(">QIII", OPT_REPLY_MAGIC, option, kind, len(data)) + data)
    await writer.drain()


async def _negotiate(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, disks: dict[str, Disk]
) -> Disk | None:
    writer.write(NBDMAGIC + struct.pack(">QH", IHAVEOPT, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
    await writer.drain()
    (client_flags,) = struct.unpack(">I", await reader.readexactly(4))
    while True:
        magic, option, length = struct.unpack(">QII", await reader.readexactly(16))
        data = await reader.readexactly(length)
        if magic != IHAVEOPT:
            return None
        if option == OPT_EXPORT_NAME:
            disk = disks.get(data.decode())
            if disk is None:
                return None
            writer.write(struct.pack(">QH", disk.capacity, TRANSMISSION_FLAGS))
            if not client_flags & FLAG_NO_ZEROES:
                writer.write(bytes(124))
            await writer.drain()
            return disk
        if option in (OPT_INFO, OPT_GO):
            (name_length,) = struct.unpack(">I", data[:4])
            disk = disks.get(data[4 : 4 + name_length].decode())
            if disk is None:
                await _option_reply(writer, option, REP_ERR_UNKNOWN, b"")
                continue
            info = struct.pack(">HQH", 0, disk.capacity, TRANSMISSION_FLAGS)
            await _option_reply(writer, option, REP_INFO, info)
            await _option_reply(writer, option, REP_ACK, b"")
            if option == OPT_GO:
                return disk
            continue
        if option == OPT_ABORT:
            await _option_reply(writer, option, REP_ACK, b"")
            return None
        await _option_reply(writer, option, REP_ERR_UNSUP, b"")


async def _transmit(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, disk: Disk) -> None:
    def answer(handle: int, error: int, data: bytes) -> None:
        writer.write(struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, error, handle) + data)

    while True:
        header = await reader.readexactly(28)
        magic, _flags, command, handle, offset, length = struct.unpack(">IHHQQI", header)
        if magic != REQUEST_MAGIC or command == CMD_DISC:
            return
        data = await reader.readexactly(length) if command == CMD_WRITE else b""
        if command == CMD_FLUSH:
            answer(handle, 0, b"")
        elif command in (CMD_READ, CMD_WRITE) and offset + length <= disk.capacity:
            disk.queue.append(
                Request(handle, command, offset, length, data, time.monotonic(), answer)
            )
            disk.wake.set()
        else:
            answer(handle, EINVAL, b"")
        await writer.drain()


def report(disks: dict[str, Disk]) -> None:
    """One line per disk: its counts since the last report (the harness keeps them in a log)."""
    stamp = time.strftime("%H:%M:%S")
    for name, disk in disks.items():
        served = disk.requests or 1
        print(
            f"{stamp} {name}: {disk.requests} requests, busy {disk.busy_s:.1f} s, "
            f"{disk.moved_bytes / served / 1024:.0f} KiB each, {disk.queued_sum / served:.1f} queued",
            flush=True,
        )
        disk.requests = disk.moved_bytes = disk.queued_sum = 0
        disk.busy_s = 0.0


async def serve(
    socket_path: Path,
    images: dict[str, Path],
    stop: asyncio.Event,
    report_s: float = math.inf,
    mechanics: Mechanics | None = None,
) -> dict[str, Disk]:
    """Serve the images as NBD exports on socket_path until stop is set; the disks, with counts."""
    disks = {
        name: Disk(path, path.stat().st_size, mechanics or Mechanics())
        for name, path in images.items()
    }
    workers = [asyncio.create_task(disk.serve()) for disk in disks.values()]

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            disk = await _negotiate(reader, writer, disks)
            if disk is not None:
                await _transmit(reader, writer, disk)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_unix_server(client, path=str(socket_path))
    async with server:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), report_s)
            if report_s < math.inf:
                report(disks)
    for worker in workers:
        worker.cancel()
    return disks


async def _serve_until_terminated(
    socket_path: Path, images: dict[str, Path], mechanics: Mechanics
) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await serve(socket_path, images, stop, report_s=10.0, mechanics=mechanics)


def main(argv: list[str]) -> int:
    mechanics = Mechanics()
    if argv and argv[0] == "--media":
        outer, _, inner = argv[1].partition("-")
        mechanics = nas_disk(float(outer), float(inner or outer))
        argv = argv[2:]
    print(f"hddsim: {mechanics}", flush=True)
    socket_path = Path(argv[0])
    images = {}
    for spec in argv[1:]:
        name, _, image = spec.partition("=")
        images[name] = Path(image)
    asyncio.run(_serve_until_terminated(socket_path, images, mechanics))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
