"""The demo's clock never runs ahead of its kernel files, however late the demo's loop runs."""

import sqlite3
from pathlib import Path

from app.kernel.host import Host
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.simulator.box import MAX_LAG_S, Simulator
from tests.tuning.tuners import Clock


def test_a_starved_demo_loop_makes_no_stall_across_the_shr_expansion(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    """At 3000x, a sample every 0.2 s and the demo's own loop never running (a busy machine):
    md2 ends, md3 starts, and neither ever reads "no progress for 11 min"; the pool gets its
    finish time once md3's pace is measured."""
    wall = Clock()  # the wall clock, moved by hand
    sim = Simulator(tmp_path / "tree", speedup=3000, seed=3, start_percent=95.0, wall=wall)
    (tmp_path / "tree/sys/block/md2/md/stripe_cache_size").write_text("16384\n")
    host = Host(tmp_path / "tree/proc", tmp_path / "tree/sys")
    sampler = Sampler(host, conn, sim.clock)
    snapshot_builder = SnapshotBuilder(host, conn)
    seen: list[tuple[str, str, str | None]] = []
    for _ in range(40):
        wall.now += 0.2
        snapshot_builder.update(sampler.sample_once())
        snapshot = snapshot_builder.snapshot
        seen += [
            (a.name, a.forecast.status, a.forecast.reason) for a in snapshot.arrays if a.forecast
        ]
        if snapshot.pool is not None:
            seen.append(("pool", snapshot.pool.status, snapshot.pool.reason))
    assert not [s for s in seen if s[1] == "stalled"], [s for s in seen if s[1] == "stalled"]
    assert sim.reshaping == "md3"
    assert ("md3", "ok", None) in seen
    pool = snapshot_builder.snapshot.pool
    assert pool is not None and pool.status == "ok" and (pool.phase, pool.phases) == (2, 2)
    assert pool.eta is not None and pool.eta > sim.clock()
    assert sim.clock() - sim.state.sim_time <= MAX_LAG_S
