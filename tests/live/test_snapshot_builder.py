"""SnapshotBuilder: the Snapshot /metrics shows, rebuilt after each sampler tick from what the tick read."""

import threading
from typing import Any

import pytest

from app.diagnosis import text
from app.diagnosis.rules import Observation
from app.diagnosis.verdicts import Diagnosis, Verdict
from app.formats import ratio
from app.kernel.host import Host
from app.live import forecasts, sampler
from app.live.snapshot import ArrayNow
from app.live.snapshot_builder import SnapshotBuilder
from app.store import history
from tests.kernel_tree import (
    RESHAPE_TOTAL,
    KernelTree,
    act_like_md,
    mdstat_text,
    progress,
    raid1,
    raid5,
    syncing_box,
)
from tests.tuning.tuners import Clock, make_tuner

SPEED_KB_S = 6000
TICK_S = 5.0
TOTAL = 1953494784
START = Clock().now


def make_sampler(tree: KernelTree, conn, clock: Clock) -> sampler.Sampler:
    return sampler.Sampler(Host(tree.proc, tree.sys), conn, clock)


def reshaping(tree: KernelTree, done: int) -> None:
    tree.mdstat(mdstat_text(raid5(progress=progress("reshape", done, TOTAL)), raid1()))
    tree.md("md2", sync_action="reshape", sync_speed="6000", stripe_cache_size="256")
    tree.md("md0")


def idle(tree: KernelTree) -> None:
    tree.mdstat(mdstat_text(raid5(), raid1()))
    tree.md("md2", stripe_cache_size="256")


def run_reshape(
    tree: KernelTree, conn, clock: Clock, snapshot_builder: SnapshotBuilder, ticks: int
):
    """`ticks` more ticks of a steady reshape, the clock telling how far it got."""
    s = make_sampler(tree, conn, clock)
    for _ in range(ticks):
        elapsed = clock.now - START
        reshaping(tree, 100_000_000 + int(elapsed * SPEED_KB_S))
        snapshot_builder.update(s.sample_once())
        clock.now += TICK_S
    return s


def test_forecast_follows_the_ticks_and_equals_the_apis(tree, conn):
    clock = Clock()
    snapshot_builder = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    run_reshape(tree, conn, clock, snapshot_builder, 2)
    md2 = next(a for a in snapshot_builder.snapshot.arrays if a.array.name == "md2")
    assert md2.forecast is not None and md2.forecast.status == "insufficient"
    run_reshape(tree, conn, clock, snapshot_builder, 12)
    md2 = next(a for a in snapshot_builder.snapshot.arrays if a.array.name == "md2")
    assert md2.forecast is not None and md2.forecast.status == "ok"
    assert md2.sysfs is not None and md2.sysfs.stripe_cache_size == 256
    run = history.open_run(conn, "md2")
    assert run is not None
    # The same samples as GET /api/arrays/md2/forecast reads from SQLite: the same numbers.
    assert md2.forecast == forecasts.rebuild(conn, run.id, None).forecast()
    assert snapshot_builder.snapshot.last_success == clock.now - TICK_S
    assert snapshot_builder.snapshot.speed_limit_max_kb_s == 200000


def test_a_restart_seeds_the_run_from_sqlite_once(tree, conn):
    clock = Clock()
    run_reshape(tree, conn, clock, SnapshotBuilder(Host(tree.proc, tree.sys), conn), 10)
    again = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    run_reshape(tree, conn, clock, again, 1)
    md2 = next(a for a in again.snapshot.arrays if a.array.name == "md2")
    assert md2.forecast is not None and md2.forecast.status == "ok"
    (run_progress,) = again.progress.values()
    assert run_progress.last is not None and run_progress.last.count == 10  # 11 samples, from 0


def test_finished_runs_are_forgotten_and_an_unreadable_mdstat_keeps_the_last_box(tree, conn):
    clock = Clock()
    snapshot_builder = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    s = run_reshape(tree, conn, clock, snapshot_builder, 4)
    idle(tree)
    snapshot_builder.update(s.sample_once())
    assert snapshot_builder.progress == {} and all(
        a.forecast is None for a in snapshot_builder.snapshot.arrays
    )
    before = snapshot_builder.snapshot
    (tree.proc / "mdstat").write_bytes(b"\x00\x01 not an mdstat")  # the tick parses nothing
    tick = s.sample_once()
    assert tick.error is not None
    snapshot_builder.update(tick)
    assert snapshot_builder.snapshot is before


def test_the_tuning_session_and_drift(tree, tmp_path):
    syncing_box(tree)
    tuner = make_tuner(tree, tmp_path)
    before = tree.snapshot()
    tuner.apply("boost")
    act_like_md(tree, before)
    tree.write("sys/block/md2/md/stripe_cache_size", "1024")  # someone else changed it
    snapshot_builder = SnapshotBuilder(tuner.host, tuner.conn)
    snapshot_builder.update(make_sampler(tree, tuner.conn, Clock()).sample_once())
    assert snapshot_builder.snapshot.preset == "boost"
    cache = next(k for k in snapshot_builder.snapshot.knobs if k.knob == "stripe_cache_size")
    assert (cache.target, cache.current, cache.drift) == ("md2", "1024", True)
    assert cache.desired != "1024"


def test_the_pool_is_one_job_only_when_several_arrays_take_part(tree, conn):
    clock = Clock()
    snapshot_builder = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    run_reshape(tree, conn, clock, snapshot_builder, 8)
    assert snapshot_builder.snapshot.pool is None  # md2 alone: its own forecast says it all
    # An SHR expansion: md3 waits its turn (resync=DELAYED) behind md2's reshape.
    s = make_sampler(tree, conn, clock)
    for _ in range(4):
        reshaping(tree, 100_000_000 + int((clock.now - START) * SPEED_KB_S))
        tree.mdstat(
            tree.read("proc/mdstat").replace("md0 :", raid5("md3", "resync=DELAYED") + "md0 :")
        )
        tree.md("md3", sync_action="resync")
        snapshot_builder.update(s.sample_once())
        clock.now += TICK_S
    pool = snapshot_builder.snapshot.pool
    assert pool is not None and (pool.status, pool.phase, pool.phases) == ("ok", 1, 2)
    md2 = next(a for a in snapshot_builder.snapshot.arrays if a.array.name == "md2").forecast
    assert md2 is not None and md2.eta is not None and pool.eta is not None and pool.eta > md2.eta


def test_the_kernel_release_is_read_once_and_names_the_boost_figure(tree, conn):
    """The boost estimate uses the running kernel generation's own measured figure."""
    (tree.proc / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
    (tree.proc / "sys" / "kernel" / "osrelease").write_text("5.10.0-32-amd64\n")
    clock = Clock()
    snapshot_builder = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    run_reshape(tree, conn, clock, snapshot_builder, 6)
    (tree.proc / "sys" / "kernel" / "osrelease").write_text("6.1.0-56-amd64\n")
    run_reshape(tree, conn, clock, snapshot_builder, 1)
    assert (
        snapshot_builder.snapshot.kernel_release == "5.10.0-32-amd64"
    )  # read at start, not per tick
    view = forecasts.array_eta(snapshot_builder.snapshot, "md2", clock.now)
    assert view.boost is not None, view
    assert "Linux 5.10" in view.boost.why, view.boost


def test_the_forecast_uses_the_running_kernels_knee_figure(tree, conn):
    """On 6.12 a disk-bound grow barely speeds up past its knee; the tick's forecast and
    the one rebuilt from SQLite after a restart both use the running kernel's figure."""
    (tree.proc / "sys" / "kernel").mkdir(parents=True, exist_ok=True)
    (tree.proc / "sys" / "kernel" / "osrelease").write_text("6.12.117+deb13-amd64\n")
    tree.md("md2", raid_disks="4 (3)")  # a 3->4 grow: its knee at 2/3
    clock = Clock()
    snapshot_builder = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    run_reshape(tree, conn, clock, snapshot_builder, 14)
    md2 = next(a for a in snapshot_builder.snapshot.arrays if a.array.name == "md2").forecast
    run = history.open_run(conn, "md2")
    assert md2 is not None and md2.status == "ok" and md2.knee is not None and run is not None
    assert md2.bound == "disks"
    on_612 = forecasts.rebuild(conn, run.id, md2.knee, "6.12.117+deb13-amd64").forecast()
    on_61 = forecasts.rebuild(conn, run.id, md2.knee, "6.1.0-56-amd64").forecast()
    assert md2 == on_612
    assert on_612.eta is not None and on_61.eta is not None and on_612.eta > on_61.eta


def test_a_grow_the_diagnosis_finds_cpu_bound_gets_no_boost_promise(tree, conn):
    """Where the tick's diagnosis shows md's raid5 thread near a full core, the estimate says a
    larger cache would not help, whatever the kernel's disk-bound figure."""
    clock = Clock()
    snapshot_builder = SnapshotBuilder(Host(tree.proc, tree.sys), conn)
    s = run_reshape(tree, conn, clock, snapshot_builder, 6)
    before = forecasts.array_eta(snapshot_builder.snapshot, "md2", clock.now)
    assert before.boost is not None and before.boost.helps, before.boost
    numbers = {"thread": "md2_raid5", "cores": 0.96, "group_thread_cnt": 0, "parity": True}
    verdict = Verdict("cpu_bound", "Limited by the CPU", "", "", clock.now, numbers, False)
    observation = Observation(clock.now, "md2", "raid5", "reshape", 6000, 10000, 200000)
    reshaping(tree, 100_000_000 + int((clock.now - START) * SPEED_KB_S))
    tick = s.sample_once()
    tick.diagnoses["md2"] = Diagnosis("md2", clock.now, (verdict,), {}, observation)
    snapshot_builder.update(tick)
    held = forecasts.array_eta(snapshot_builder.snapshot, "md2", clock.now)
    assert held.boost is not None and not held.boost.helps, held.boost
    assert held.boost.why.startswith("md2_raid5 uses 96% of a CPU core: the CPU sets the pace")


def test_no_osrelease_means_no_kernel_release(tree, conn):
    assert SnapshotBuilder(Host(tree.proc, tree.sys), conn).snapshot.kernel_release is None


def test_the_instant_after_a_revert_the_finish_is_the_untuned_paces(tree, tmp_path):
    """Boost took md2 from 6 to 30 MB/s; the answer to the revert (before any tick)
    and the ticks while md's 30 s average still remembers the boost show the finish at the
    pace before boost, settling, never the boosted one."""
    syncing_box(tree)
    clock = Clock()
    tuner = make_tuner(tree, tmp_path, clock)
    snapshot_builder = SnapshotBuilder(tuner.host, tuner.conn, tuner.lock)
    tuner.attach(snapshot_builder)
    s = make_sampler(tree, tuner.conn, clock)
    done = 100_000_000

    def tick(speed: int, ticks: int) -> None:
        nonlocal done
        for _ in range(ticks):
            done += int(speed * TICK_S)
            tree.mdstat(
                mdstat_text(raid5(progress=progress("reshape", done, RESHAPE_TOTAL)), raid1())
            )
            snapshot_builder.update(s.sample_once())
            clock.now += TICK_S

    def md2_forecast():
        return next(a for a in snapshot_builder.snapshot.arrays if a.array.name == "md2").forecast

    tick(6_000, 20)
    assert md2_forecast().status == "ok"
    tuner.apply("boost")
    tick(30_000, 20)
    boosted = md2_forecast()
    assert boosted.status == "ok" and boosted.speed_blocks_s > 25_000, boosted
    tuner.revert("requested")
    at_once = md2_forecast()  # no tick since the revert
    assert at_once.status == "settling" and at_once.regime == "revert", at_once
    assert at_once.speed_blocks_s == pytest.approx(6_000, rel=0.1), at_once
    assert at_once.eta > boosted.eta + 1000
    tick(30_000, 3)  # md's average still at the boosted pace
    after = md2_forecast()
    assert after.status == "settling" and after.speed_blocks_s == pytest.approx(6_000, rel=0.1)


class HeldAtTheDoor:
    """The builder's `writes` lock, with a door before it: a tick that reaches it waits there
    until the test opens it, so an apply can finish exactly while the tick is half built."""

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
        self.reached = threading.Event()
        self.open = threading.Event()

    def __enter__(self) -> None:
        self.reached.set()
        assert self.open.wait(30), "the test never opened the door"
        self.lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def test_an_apply_that_ends_while_a_tick_is_built_stays_published(tree, tmp_path):
    """Seen in CI: the owner pressed "Apply boost" while the sampler was building its tick; the
    tick published the state from before the press over it, and the switch read "Boost is off"
    over a boosted kernel until something else changed."""
    syncing_box(tree)
    clock = Clock()
    tuner = make_tuner(tree, tmp_path, clock)
    door = HeldAtTheDoor(tuner.lock)
    snapshot_builder = SnapshotBuilder(tuner.host, tuner.conn, door)  # type: ignore[arg-type]
    tuner.attach(snapshot_builder)
    tick = make_sampler(tree, tuner.conn, clock).sample_once()
    door.open.set()
    snapshot_builder.update(tick)
    assert snapshot_builder.snapshot.job.tuned.kind == "off"
    door.open.clear()
    clock.now += TICK_S
    tick = make_sampler(tree, tuner.conn, clock).sample_once()
    building = threading.Thread(target=snapshot_builder.update, args=(tick,))
    building.start()
    assert door.reached.wait(30)
    tuner.apply("boost")
    assert snapshot_builder.snapshot.job.tuned.kind == "boost"
    door.open.set()
    building.join(30)
    assert not building.is_alive()
    assert snapshot_builder.snapshot.job.tuned.kind == "boost"
    assert snapshot_builder.snapshot.preset == "boost"


def test_a_revert_that_ends_while_a_tick_is_built_keeps_the_untuned_finish(tree, tmp_path):
    """The tick read md2 at boost's 30 MB/s and made its forecast; the owner reverted before it
    published. The finish the revert drew (at the 6 MB/s before boost) stays: the tick's
    boosted finish is not published over it for five seconds."""
    syncing_box(tree)
    clock = Clock()
    tuner = make_tuner(tree, tmp_path, clock)
    door = HeldAtTheDoor(tuner.lock)
    door.open.set()
    snapshot_builder = SnapshotBuilder(tuner.host, tuner.conn, door)  # type: ignore[arg-type]
    tuner.attach(snapshot_builder)
    s = make_sampler(tree, tuner.conn, clock)
    done = 100_000_000

    def read(speed: int) -> Any:
        nonlocal done
        done += int(speed * TICK_S)
        tree.mdstat(mdstat_text(raid5(progress=progress("reshape", done, RESHAPE_TOTAL)), raid1()))
        tick = s.sample_once()
        clock.now += TICK_S  # a write comes between two ticks
        return tick

    def md2_forecast():
        return next(a for a in snapshot_builder.snapshot.arrays if a.array.name == "md2").forecast

    for _ in range(20):
        snapshot_builder.update(read(6_000))
    tuner.apply("boost")
    for _ in range(20):
        snapshot_builder.update(read(30_000))
    boosted = md2_forecast()
    assert boosted.speed_blocks_s > 25_000, boosted
    door.open.clear()
    door.reached.clear()
    building = threading.Thread(target=snapshot_builder.update, args=(read(30_000),))
    building.start()
    assert door.reached.wait(30)
    tuner.revert("requested")
    at_once = md2_forecast()
    assert at_once.regime == "revert" and at_once.speed_blocks_s == pytest.approx(6_000, rel=0.1)
    door.open.set()
    building.join(30)
    assert not building.is_alive()
    published = md2_forecast()
    assert published.regime == "revert", published
    assert published.speed_blocks_s == pytest.approx(6_000, rel=0.1), published
    assert published.eta > boosted.eta + 1000
    job = snapshot_builder.snapshot.job
    assert job.forecast is not None and job.forecast.eta is not None
    assert job.forecast.eta >= published.eta - 1


def at_the_disks_limit(now: float) -> Diagnosis:
    """md2's members all 97 % busy: the verdict whose advice depends on boost's estimate."""
    numbers = {"busy_min": 0.97, "busy_max": 0.97, "kib_s": 6000.0}
    said = text.sentence("disks_limit", numbers)
    verdict = Verdict("disks_limit", text.TITLES["disks_limit"], said, said, now, numbers, False)
    observation = Observation(now, "md2", "raid5", "reshape", 6000, 10000, 200000)
    return Diagnosis("md2", now, (verdict,), {}, observation)


def test_the_verdict_is_judged_beside_the_estimate_the_tick_made_and_after_a_revert(tree, tmp_path):
    """The disks at their limit while boost's estimate offers more than x1.1: the tick judges
    the verdict beside that estimate, never "Nothing to tune", and every reader gets both as
    they are. Boost on: no estimate, a write's verdicts go until the next tick judges the new
    knobs. The instant after the revert (before any tick) the estimate is offered again over
    the untuned pace, from what the last tick read, with no SQL from the writer's thread."""
    syncing_box(tree)
    clock = Clock()
    tuner = make_tuner(tree, tmp_path, clock)
    snapshot_builder = SnapshotBuilder(tuner.host, tuner.conn, tuner.lock)
    tuner.attach(snapshot_builder)
    s = make_sampler(tree, tuner.conn, clock)
    done = 100_000_000

    def tick(speed: int, ticks: int) -> None:
        nonlocal done
        for _ in range(ticks):
            done += int(speed * TICK_S)
            tree.mdstat(
                mdstat_text(raid5(progress=progress("reshape", done, RESHAPE_TOTAL)), raid1())
            )
            found = s.sample_once()
            found.diagnoses["md2"] = at_the_disks_limit(clock.now)
            snapshot_builder.update(found)
            clock.now += TICK_S

    def md2() -> ArrayNow:
        found = snapshot_builder.snapshot.array("md2")
        assert found is not None
        return found

    tick(6_000, 20)
    offered = md2().boost
    assert offered is not None and offered.helps and offered.ratio > 1.1, offered
    said = md2().diagnosis
    assert said is not None and said.primary is not None
    assert "Nothing to tune" not in said.primary.sentence
    assert f"about ×{ratio(offered.ratio)} faster" in said.primary.sentence
    assert forecasts.diagnosis(snapshot_builder.snapshot, "md2") is said
    assert forecasts.array_eta(snapshot_builder.snapshot, "md2", clock.now).boost is offered

    tuner.apply("boost")
    assert md2().boost is None and md2().diagnosis is None  # judged on the knobs before it
    tick(30_000, 20)
    boosted = md2().diagnosis
    assert md2().boost is None and boosted is not None and boosted.primary is not None
    assert "Nothing to tune" in boosted.primary.sentence  # boost is on: nothing more to offer

    statements: list[str] = []
    tuner.conn.set_trace_callback(statements.append)
    reads = len(statements)
    after_write = tuner.applier.on_write
    assert after_write is not None

    def counted(*args: Any) -> None:
        nonlocal reads
        reads = len(statements)
        after_write(*args)
        reads = len(statements) - reads

    tuner.applier.on_write = counted
    tuner.revert("requested")
    tuner.conn.set_trace_callback(None)
    assert reads == 0  # the estimate came from what the last tick read
    at_once = md2()
    assert at_once.diagnosis is None and at_once.forecast is not None
    assert at_once.boost is not None and at_once.boost.ratio == offered.ratio, at_once.boost
    assert at_once.forecast.eta is not None and at_once.boost.eta < at_once.forecast.eta
    tick(30_000, 1)
    assert md2().diagnosis is None  # that tick may have read the kernel before the revert
    tick(30_000, 1)
    again = md2().diagnosis
    assert again is not None and again.primary is not None and md2().boost is not None
    assert "Nothing to tune" not in again.primary.sentence
