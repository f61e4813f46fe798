"""hddsim.py, the spinning disk the auto-tune bench runs on: its mechanics and its NBD answers.

A small NBD client speaks the handshake and requests QEMU does over the socket; the last test
boots the real kernel on two such disks.
"""

import asyncio
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import hddsim
import pytest
import vmharness

MIB = 1 << 20
CAPACITY = 256 * MIB
DISK = hddsim.Mechanics()


def test_the_next_request_in_line_costs_only_its_transfer() -> None:
    assert DISK.service_s(4096, 4096, 65536, CAPACITY) == pytest.approx(65536 / 60e6)


def test_a_short_skip_forward_waits_for_the_platter_not_the_arm() -> None:
    skip = DISK.service_s(0, 128 * 1024, 65536, CAPACITY)
    back = DISK.service_s(128 * 1024, 0, 65536, CAPACITY)
    assert DISK.service_s(0, 0, 65536, CAPACITY) < skip < back
    assert DISK.service_s(0, 100 * MIB, 4096, CAPACITY) == DISK.service_s(
        100 * MIB, 0, 4096, CAPACITY
    )


def test_a_seek_grows_with_the_distance_up_to_a_full_stroke_and_half_a_turn() -> None:
    costs = [DISK.service_s(0, d * MIB, 4096, CAPACITY) for d in (2, 16, 64, 255)]
    assert costs == sorted(costs)
    full = DISK.seek_max_s + 30 / DISK.rpm + 4096 / DISK.rate_bytes_s
    assert costs[-1] <= full
    assert DISK.service_s(255 * MIB, 0, 4096, CAPACITY) == pytest.approx(costs[-1], rel=0.01)


def _request(offset: int, arrived: float) -> hddsim.Request:
    return hddsim.Request(0, hddsim.CMD_READ, offset, 4096, b"", arrived, lambda *_: None)


def test_a_nas_disk_streams_faster_at_its_outer_edge_than_at_its_inner() -> None:
    nas = hddsim.nas_disk(250, 150)
    assert nas.rate_at(0, CAPACITY) == 250e6 and nas.rate_at(CAPACITY, CAPACITY) == 150e6
    assert nas.rate_at(CAPACITY // 2, CAPACITY) == pytest.approx(200e6)
    outer = nas.service_s(0, 0, 4 * MIB, CAPACITY)
    inner = nas.service_s(CAPACITY - 4 * MIB, CAPACITY - 4 * MIB, 4 * MIB, CAPACITY)
    assert outer == pytest.approx(4 * MIB / 250e6) and inner > outer


def test_the_queue_serves_the_nearest_first_and_the_starved_before_it(tmp_path: Path) -> None:
    disk = hddsim.Disk(tmp_path / "d0.img", CAPACITY, head=100 * MIB)
    far, near, mid = _request(0, 10.0), _request(96 * MIB, 10.2), _request(140 * MIB, 10.1)
    disk.queue = [far, near, mid]
    assert disk.next_request(now=10.5) is near
    assert disk.next_request(now=11.0 + hddsim.STARVED_S) is far
    assert disk.queue == [mid]


class Client:
    """The client side of the NBD protocol, as far as QEMU uses it with this server."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def option(self, option: int, data: bytes) -> tuple[int, bytes]:
        self.writer.write(struct.pack(">QII", hddsim.IHAVEOPT, option, len(data)) + data)
        magic, _option, kind, length = struct.unpack(">QIII", await self.reader.readexactly(20))
        assert magic == hddsim.OPT_REPLY_MAGIC
        return kind, await self.reader.readexactly(length)

    async def go(self, name: str) -> int:
        """Negotiate export `name`; its size."""
        request = struct.pack(">I", len(name)) + name.encode() + struct.pack(">H", 0)
        kind, info = await self.option(hddsim.OPT_GO, request)
        assert kind == hddsim.REP_INFO
        assert await self.option_ack() == hddsim.REP_ACK
        _type, size, _flags = struct.unpack(">HQH", info)
        return size

    async def option_ack(self) -> int:
        _magic, _option, kind, _length = struct.unpack(">QIII", await self.reader.readexactly(20))
        return kind

    async def command(self, command: int, offset: int, length: int, data: bytes = b"") -> bytes:
        header = struct.pack(">IHHQQI", hddsim.REQUEST_MAGIC, 0, command, 7, offset, length)
        self.writer.write(header + data)
        magic, error, handle = struct.unpack(">IIQ", await self.reader.readexactly(16))
        assert (magic, handle) == (hddsim.SIMPLE_REPLY_MAGIC, 7)
        if error:
            raise OSError(error, "the disk refused")
        return await self.reader.readexactly(length) if command == hddsim.CMD_READ else b""


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[tuple[Client, dict[str, hddsim.Disk]]]:
    image = tmp_path / "d0.img"
    with image.open("wb") as f:
        f.truncate(CAPACITY)
    socket_path = tmp_path / "hdd.sock"
    stop = asyncio.Event()
    server = asyncio.create_task(hddsim.serve(socket_path, {"d0": image}, stop))
    while not socket_path.exists():
        assert not server.done(), server
        await asyncio.sleep(0)
    reader, writer = await asyncio.open_unix_connection(str(socket_path))
    assert await reader.readexactly(8) == hddsim.NBDMAGIC
    await reader.readexactly(10)
    writer.write(struct.pack(">I", hddsim.FLAG_FIXED_NEWSTYLE | hddsim.FLAG_NO_ZEROES))
    disks: dict[str, hddsim.Disk] = {}
    try:
        yield Client(reader, writer), disks
    finally:
        writer.close()
        stop.set()
        disks.update(await server)


def test_what_is_written_reads_back_and_each_answer_waits_for_the_head(tmp_path: Path) -> None:
    async def scenario() -> dict[str, hddsim.Disk]:
        async with served(tmp_path) as (client, disks):
            assert await client.go("d0") == CAPACITY
            pattern = bytes(range(256)) * 256
            await client.command(hddsim.CMD_WRITE, 200 * MIB, len(pattern), pattern)
            assert await client.command(hddsim.CMD_READ, 200 * MIB, len(pattern)) == pattern
            assert await client.command(hddsim.CMD_READ, 0, 4096) == bytes(4096)
            with pytest.raises(OSError, match="refused"):
                await client.command(hddsim.CMD_READ, CAPACITY - 4096, 8192)
        return disks

    disk = asyncio.run(scenario())["d0"]
    assert disk.requests == 3
    end = 200 * MIB + 65536
    head_moves = [(0, 200 * MIB, 65536), (end, 200 * MIB, 65536), (end, 0, 4096)]
    assert disk.busy_s == pytest.approx(sum(DISK.service_s(*m, CAPACITY) for m in head_moves))
    assert disk.head == 4096
    assert (tmp_path / "d0.img").read_bytes()[200 * MIB : 200 * MIB + 4] == bytes([0, 1, 2, 3])


def test_an_unknown_disk_name_is_refused_and_the_client_may_ask_again(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with served(tmp_path) as (client, _disks):
            request = struct.pack(">I", 2) + b"d9" + struct.pack(">H", 0)
            kind, _ = await client.option(hddsim.OPT_GO, request)
            assert kind == hddsim.REP_ERR_UNKNOWN
            kind, _ = await client.option(99, b"")
            assert kind == hddsim.REP_ERR_UNSUP
            assert await client.go("d0") == CAPACITY

    asyncio.run(scenario())


@pytest.mark.realkernel
def test_the_kernel_sees_a_spinning_disk_scheduled_like_a_nas_disk_and_its_data_holds(
    vm_image: vmharness.Image,
) -> None:
    guest = """set -e
cat /sys/block/vda/queue/scheduler > $OUT/scheduler
head -c 1048576 /dev/urandom > /tmp/pattern
dd if=/tmp/pattern of=/dev/vda bs=64k seek=100 oflag=direct status=none
dd if=/dev/vda of=/tmp/back bs=64k skip=100 count=16 iflag=direct status=none
cmp /tmp/pattern /tmp/back
"""
    run = vmharness.boot(vm_image, guest, disks=2, disk_size_mib=256, spinning=True, timeout_s=300)
    assert run.rc == 0, run.describe()
    assert "[mq-deadline]" in (run.out / "scheduler").read_text()
    served = [line.split() for line in (run.run_dir / "hddsim.log").read_text().splitlines()]
    assert sum(int(words[2]) for words in served if words[1] == "d0:") >= 2
