"""Boost is for the owner's whole job: pressed while md2 of the demo's SHR expansion grows, it
is applied to md3 as md3's phase starts and stays on until the job ends."""

from pathlib import Path

from app.config import Settings
from app.kernel.host import Host
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.simulator.box import Simulator
from app.store import db, journal
from app.tuning.planning import presets
from app.tuning.tuner import Tuner
from tests import PROJECT_ROOT
from tests.live.test_forecasts import sample, served, simulated_box
from tests.tuning.tuners import Clock

CACHE = "sys/block/{}/md/stripe_cache_size"


def test_boost_pressed_in_md2_is_on_md3_when_its_phase_starts(tmp_path: Path) -> None:
    wall = Clock()
    sim = Simulator(tmp_path / "tree", speedup=300, seed=1, start_percent=97.0, wall=wall)
    tree = tmp_path / "tree"
    settings = Settings(proc_root=tree / "proc", sys_root=tree / "sys", db=tmp_path / "mdboost.db")
    conn = db.connect(settings.db)
    db.migrate(conn, PROJECT_ROOT / "migrations")
    host = Host(settings.proc_root, settings.sys_root)
    found, errors = presets.load_all(settings.presets_dir, settings.data_dir)
    tuner = Tuner(host, conn, sim.clock, settings, found, errors)
    sampler = Sampler(host, conn, sim.clock)
    builder = SnapshotBuilder(host, conn)

    def tick() -> None:
        wall.now += 5.0
        sampled = sampler.sample_once()
        builder.update(sampled)
        tuner.on_tick(sampled, builder.snapshot)

    tick()
    assert tuner.apply("boost").ok
    boosted = (tree / CACHE.format("md2")).read_text().strip()
    md3_before = (
        (tree / CACHE.format("md3")).read_text().strip()
        if (tree / CACHE.format("md3")).exists()
        else None
    )
    for _ in range(200):
        tick()
        if sim.reshaping == "md3" and builder.snapshot.job.running is not None:
            break
    assert sim.reshaping == "md3"
    tick()  # md3's phase is running: boost follows it
    session = journal.open_session(conn)
    assert session is not None and session.preset == "boost", "boost ended with md2"
    assert (tree / CACHE.format("md3")).read_text().strip() == boosted
    assert md3_before != boosted
    tuner.revert()
    assert (tree / CACHE.format("md3")).read_text().strip() != boosted


def test_the_page_says_boost_holds_for_the_phases_to_come(tmp_path: Path) -> None:
    sim = Simulator(tmp_path / "tree", seed=3, start_percent=20.0)
    settings, conn = simulated_box(tmp_path, sim)
    found, errors = presets.load_all(settings.presets_dir, settings.data_dir)
    host = Host(settings.proc_root, settings.sys_root)
    tuner = Tuner(host, conn, lambda: sim.state.sim_time, settings, found, errors)
    assert tuner.apply("boost").ok
    sample(settings, conn, sim)
    with served(settings, sim) as client:
        page = client.get("/").text
    assert "Boost holds for the whole job: md3 gets it as its phase starts" in page
