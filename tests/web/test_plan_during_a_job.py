"""The change planner during a job: a plan made while an expansion runs starts from the pool
as that expansion will leave it."""

import sqlite3
from pathlib import Path

from app.kernel.host import Host
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.planner.change import tb
from app.simulator.box import Simulator
from app.web import change_planning
from tests.live.test_job import SPEEDUP, TICK_S
from tests.tuning.tuners import Clock


def test_a_plan_made_during_the_expansion_starts_from_the_pool_it_leaves(
    tmp_path: Path, conn: sqlite3.Connection
) -> None:
    """Adding 8 TB to the demo's disks while md2 grows onto sdd: once the expansion ends md2
    spans all four disks and md3 spans sda, sdb and sdd; SHR-1 (the sum less the largest disk)
    then gives 4 x 2 + 3 x 1 = 11 TB, not the 10 TB of the pool as md3 is now."""
    wall = Clock()
    sim = Simulator(tmp_path / "tree", speedup=SPEEDUP, seed=1, wall=wall)
    host = Host(tmp_path / "tree/proc", tmp_path / "tree/sys")
    sampler = Sampler(host, conn, sim.clock)
    builder = SnapshotBuilder(host, conn)
    for _ in range(3):
        wall.now += TICK_S
        builder.update(sampler.sample_once())
    snapshot = builder.snapshot
    asked = change_planning.ChangeRequest("add", 8 * 10**12)
    plan = change_planning.plan_requested_change(snapshot, conn, asked, sim.clock())
    assert (tb(plan.before.usable), tb(plan.after.usable)) == ("8.0 TB", "11.0 TB")
    assert [(s.array, s.action, s.disks_after) for s in plan.steps] == [
        ("md2", "grow", 5),
        ("md3", "grow", 4),
    ]
    assert "the job running now (md2, md3)" in plan.notes[0]
