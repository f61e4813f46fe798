"""The owner's job on the demo box: an SHR expansion is one job of md2's grow then md3's, its
finish counted over both from md2's first hour."""

import sqlite3
from pathlib import Path

from app.kernel.host import Host
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.simulator.box import Simulator
from tests.tuning.tuners import Clock

SPEEDUP = 300.0  # the demo at x300: a 5 s tick is 25 simulated minutes
TICK_S = 5.0
HALF_DAY_S = 12 * 3600.0


def run_demo_to_its_end(tmp_path: Path, conn: sqlite3.Connection, seed: int):  # type: ignore[no-untyped-def]
    """The demo's SHR pool (3 + 3 + 2 TB growing onto a 3 TB disk) from 12 % to md3's end, a
    tick every 5 wall seconds; each tick's (time, running array, job forecast, phases)."""
    wall = Clock()
    sim = Simulator(tmp_path / "tree", speedup=SPEEDUP, seed=seed, wall=wall)
    host = Host(tmp_path / "tree/proc", tmp_path / "tree/sys")
    sampler = Sampler(host, conn, sim.clock)
    builder = SnapshotBuilder(host, conn)
    seen = []
    while not (sim.state.phase == 1 and sim.finished):
        wall.now += TICK_S
        builder.update(sampler.sample_once())
        job = builder.snapshot.job
        running = job.running
        seen.append((sim.clock(), running.name if running else None, job.forecast, job.phases))
    return sim, seen


def test_the_demo_expansion_is_one_job_whose_finish_holds_from_the_first_hour(
    tmp_path: Path, conn: sqlite3.Connection, figure
) -> None:
    seed = 1
    sim, seen = run_demo_to_its_end(tmp_path, conn, seed)
    # md3 ended within one of md's 3 s marks of its last one
    start, end = seen[0][0], sim.state.marks[-1][0]
    first = seen[0]
    assert first[1] == "md2"
    assert [(p.name, p.state) for p in first[3]] == [("md2", "running"), ("md3", "coming")]
    errors, late = [], []
    for ts, running, forecast, _ in seen:
        if ts - start < 3600 or ts >= end:
            continue
        assert forecast is not None and forecast.phases == 2, (ts - start, forecast)
        assert forecast.phase == (1 if running == "md2" else 2)
        assert forecast.status in ("ok", "settling"), (running, forecast.reason)
        if end - ts >= HALF_DAY_S:
            errors.append(abs(forecast.eta - end) / (end - ts))
        else:
            late.append(abs(forecast.eta - end))
    figure(
        f"demo SHR job (seed {seed}): finish within {max(errors):.1%} of the time left while "
        f"12 h or more were left ({len(errors)} ticks), within {max(late) / 60:.0f} min after"
    )
    assert max(errors) <= 0.10
    assert max(late) <= 0.10 * HALF_DAY_S
