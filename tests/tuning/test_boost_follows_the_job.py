"""Boost is for the owner's whole job: pressed while md2 of the demo's SHR expansion grows, it
is applied to md3 as md3's phase starts and stays on until the job ends."""

from collections.abc import Callable
from pathlib import Path

from app.config import Settings
from app.kernel.host import Host
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.notify.notifier import Notifier
from app.simulator.box import Simulator
from app.store import db, journal
from app.tuning.planning import presets
from app.tuning.tuner import Tuner
from tests import PROJECT_ROOT
from tests.live.test_forecasts import sample, served, simulated_box
from tests.tuning.tuners import Clock

CACHE = "sys/block/{}/md/stripe_cache_size"


def _watching(
    sim: Simulator, tree: Path, tmp_path: Path
) -> tuple[db.Connection, Tuner, Sampler, SnapshotBuilder]:
    """The database, tuner, sampler and snapshot builder of mdboost over the simulator's tree."""
    settings = Settings(proc_root=tree / "proc", sys_root=tree / "sys", db=tmp_path / "mdboost.db")
    conn = db.connect(settings.db)
    db.migrate(conn, PROJECT_ROOT / "migrations")
    host = Host(settings.proc_root, settings.sys_root)
    found, errors = presets.load_all(settings.presets_dir, settings.data_dir)
    tuner = Tuner(host, conn, sim.clock, settings, found, errors)
    return conn, tuner, Sampler(host, conn, sim.clock), SnapshotBuilder(host, conn)


def _ticker(
    wall: Clock, sampler: Sampler, builder: SnapshotBuilder, tuner: Tuner
) -> Callable[[], None]:
    """One tick of mdboost 5 s of wall time later: sample, build the present, let the tuner act."""

    def tick() -> None:
        wall.now += 5.0
        sampled = sampler.sample_once()
        builder.update(sampled)
        tuner.on_tick(sampled, builder.snapshot)

    return tick


def _boost_until_md2_ends(
    tuner: Tuner, tick: Callable[[], None], sim: Simulator, tree: Path
) -> str:
    """Press boost, then tick until md2's reshape ends; the stripe cache boost wrote on md2."""
    assert tuner.apply("boost").ok
    boosted = (tree / CACHE.format("md2")).read_text().strip()
    for _ in range(200):
        tick()
        if sim.finished:
            break
    return boosted


def test_boost_pressed_in_md2_is_on_md3_when_its_phase_starts(tmp_path: Path) -> None:
    wall = Clock()
    sim = Simulator(tmp_path / "tree", speedup=300, seed=1, start_percent=97.0, wall=wall)
    tree = tmp_path / "tree"
    conn, tuner, sampler, builder = _watching(sim, tree, tmp_path)
    tick = _ticker(wall, sampler, builder, tuner)

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


def test_boost_holds_through_the_idle_gap_between_two_phases(tmp_path: Path) -> None:
    """DSM begins md3 some seconds after md2 ends: for several ticks md shows the pool idle.
    Boost stays on md2 through that gap, follows md3 when it begins, and goes only when the
    whole job ends."""
    wall = Clock()
    tree = tmp_path / "tree"
    sim = Simulator(tree, speedup=10, seed=1, start_percent=99.8, wall=wall, phase_gap_s=300)
    conn, tuner, sampler, builder = _watching(sim, tree, tmp_path)
    settings = Settings(proc_root=tree / "proc", sys_root=tree / "sys", db=tmp_path / "mdboost.db")
    notifier = Notifier.open(tuner.host, sim.clock, settings, builder, wall)
    told: list[str] = []

    def tick() -> None:  # _ticker's, and the pushes it would send, as the app's tick hook does
        wall.now += 5.0
        sampled = sampler.sample_once()
        builder.update(sampled)
        tuner.on_tick(sampled, builder.snapshot)
        told.extend(m.kind for m in notifier.on_tick(sampled))

    tick()
    assert builder.snapshot.job.to_come == ("md3",)
    boosted = _boost_until_md2_ends(tuner, tick, sim, tree)
    gap_ticks = 0
    while sim.finished and sim.next_phase_coming:
        tick()
        if sim.finished and sim.next_phase_coming:  # the tick read the idle pool
            gap_ticks += 1
            session = journal.open_session(conn)
            assert session is not None, f"boost ended in the gap, tick {gap_ticks}"
            assert (tree / CACHE.format("md2")).read_text().strip() == boosted
            job = builder.snapshot.job
            assert job.to_come == ("md3",) and job.running is None
            # the whole job's finish as planned at md2's end, with no phase named running
            assert job.forecast is not None and job.forecast.phase is None
    assert gap_ticks >= 4
    # Boost is on for the job, which goes on: no "boost is still on, revert it" push.
    assert "boost_left_on" not in told, told
    tick()  # md3's phase is running: boost follows it
    session = journal.open_session(conn)
    assert session is not None and session.preset == "boost"
    assert "md3" in session.arrays
    assert (tree / CACHE.format("md3")).read_text().strip() == boosted

    sim.state.done_blocks = sim.total_blocks - 1000  # md3 nearly done: the job's end
    for _ in range(20):
        tick()
        if journal.open_session(conn) is None:
            break
    assert sim.finished and not sim.next_phase_coming
    assert journal.open_session(conn) is None, "boost outlived the job"
    assert (tree / CACHE.format("md3")).read_text().strip() != boosted
    assert (tree / CACHE.format("md2")).read_text().strip() != boosted


def test_boost_left_on_when_the_nas_restarts_between_two_phases_goes_on_the_next(
    tmp_path: Path,
) -> None:
    """A restart in the gap between md2's end and md3's start: at start-up nothing syncs, so no
    job can be known yet. The boost the owner left on waits for the job's next phase and goes
    on md3 as it begins, over the kernel's fresh values, and says it was re-applied."""
    wall = Clock()
    tree = tmp_path / "tree"
    sim = Simulator(tree, speedup=10, seed=1, start_percent=99.8, wall=wall, phase_gap_s=300)
    boot = tree / "proc/sys/kernel/random/boot_id"
    boot.parent.mkdir(parents=True, exist_ok=True)
    boot.write_text("0f6d6a8e-0000-4000-8000-000000000001\n")
    conn, tuner, sampler, builder = _watching(sim, tree, tmp_path)
    tick = _ticker(wall, sampler, builder, tuner)

    tick()
    boosted = _boost_until_md2_ends(tuner, tick, sim, tree)
    tick()
    assert sim.finished and sim.next_phase_coming, "the restart is meant to fall in the gap"

    # The NAS restarts (no stop: the session stays open); the kernel forgot every knob.
    (tree / CACHE.format("md2")).write_text("256\n")
    boot.write_text("0f6d6a8e-0000-4000-8000-000000000002\n")
    conn, tuner, sampler, builder = _watching(sim, tree, tmp_path)
    tick = _ticker(wall, sampler, builder, tuner)
    assert tuner.reconcile() == "waiting"
    assert journal.open_session(conn) is None  # nothing of it is in the kernel now
    for _ in range(20):
        tick()
        if sim.reshaping == "md3" and builder.snapshot.job.running is not None:
            break
    assert sim.reshaping == "md3"
    tick()
    session = journal.open_session(conn)
    assert session is not None and session.preset == "boost", "the boost left on was lost"
    assert session.arrays == ["md3"]
    assert (tree / CACHE.format("md3")).read_text().strip() == boosted
    assert tuner.restarted_note(session) == "boost re-applied after the NAS restarted"
    originals = {k.key: k.original for k in journal.session_knobs(conn, session.id)}
    assert originals["stripe_cache_size@md3"] == "256"
