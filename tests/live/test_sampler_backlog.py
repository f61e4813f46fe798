"""Ticks kept in memory while the disk is full go back in pieces that fit: on a real 4 MiB tmpfs
with a little room freed, a backlog that does not fit in one transaction is written in part,
not refused as a whole until all of it fits."""

import os

from app.kernel.host import Host
from app.live import sampler
from app.store import db
from tests import PROJECT_ROOT
from tests.conftest import SmallDisk
from tests.kernel_tree import KernelTree, syncing_box
from tests.live.test_sampler import ManualClock


def stored(conn) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0])


def test_a_backlog_goes_back_in_pieces_when_a_little_room_comes_back(
    tree: KernelTree, small_disk: SmallDisk
):
    syncing_box(tree)
    conn = db.connect(small_disk.path / "mdboost.db")
    db.migrate(conn, PROJECT_ROOT / "migrations")
    clock = ManualClock(start=1_700_000_000.0)
    sampling = sampler.Sampler(Host(tree.proc, tree.sys), conn, clock)
    sampling.sample_once()
    small_disk.fill()
    for _ in range(3000):
        clock.now += 5
        sampling.sample_once()
    backlog = len(sampling.pending)
    assert backlog >= 2999
    before = stored(conn)
    size = small_disk.filler.stat().st_size
    os.truncate(small_disk.filler, size - 160 * 1024)  # room for part of the backlog
    clock.now += 5
    sampling.sample_once()
    assert stored(conn) > before  # some of it is written...
    assert 0 < len(sampling.pending) < backlog  # ...and only the rest waits
    small_disk.free()
    clock.now += 5
    sampling.sample_once()
    assert sampling.pending == []
    conn.close()
