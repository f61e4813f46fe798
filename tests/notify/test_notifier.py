"""The simulated SHR expansion end to end in one process: sampler ticks, the notifier queues,
the deliverer sends to a real local webhook. Start, milestones and finish of md2 then md3, one
finish for the whole pool, and a stall while the simulated disks stop."""

from pathlib import Path

from app.config import Settings
from app.kernel.host import Host
from app.live.sampler import Sampler
from app.live.snapshot_builder import SnapshotBuilder
from app.notify import destinations
from app.notify.delivery import Deliverer, DeliveryRules
from app.notify.notifier import Notifier
from app.simulator import Simulator
from app.store import db, history, journal
from app.tuning.planning.knob_plan import KnobChange
from tests.kernel_tree import RESHAPE_TOTAL, mdstat_text, progress, raid1, raid5, syncing_box
from tests.notify.receivers import HttpReceiver


def test_an_shr_expansion_on_the_simulator_tells_the_owner_each_step(tmp_path: Path):
    sim = Simulator(tmp_path / "tree", seed=3)
    (tmp_path / "tree/sys/block/md2/md/stripe_cache_size").write_text("16384\n")  # 5x faster
    settings = Settings(
        proc_root=tmp_path / "tree/proc",
        sys_root=tmp_path / "tree/sys",
        db=tmp_path / "mdboost.db",
        public_url="http://nas.local:8080/",
    )
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    clock = lambda: sim.state.sim_time  # noqa: E731
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, clock)
    receiver = HttpReceiver().start()
    destinations.add(conn, f"http://{receiver.base}/hook", clock(), allow_local=True)
    notifier = Notifier(db.connect(settings.db), sampler.host, clock, settings)
    deliverer = Deliverer(
        db.connect(settings.db), DeliveryRules(max_per_minute=100, allow_local=True)
    )

    def tick(seconds: float) -> None:
        sim.advance(seconds)
        notifier.on_tick(sampler.sample_once())
        deliverer.pass_once()

    try:
        for _ in range(2000):
            tick(1800)
            if sim.reshaping == "md3" and sim.state.done_blocks > 0.3 * sim.total_blocks:
                break
        sim.freeze()
        for _ in range(4):
            tick(300)
        sim.freeze(False)
        for _ in range(2000):
            tick(1800)
            if sim.finished:
                break
        for _ in range(3):
            tick(120)  # the pool settles: nothing else starts
        messages = [r.json() for r in receiver.taken()]
    finally:
        receiver.stop()
    keys = [m["key"] for m in messages]
    md2, md3 = _run_ids(conn)
    assert keys == [
        f"run:{md2}:started",
        f"run:{md2}:milestone:25",
        f"run:{md2}:milestone:50",
        f"run:{md2}:milestone:75",
        f"run:{md2}:finished",
        f"run:{md3}:started",
        f"run:{md3}:milestone:25",
        keys[7],
        keys[8],
        f"run:{md3}:milestone:50",
        f"run:{md3}:milestone:75",
        f"run:{md3}:finished",
        f"pool:{md2}:finished",
    ]
    assert keys[7].startswith(f"run:{md3}:stalled:") and keys[8].startswith(f"run:{md3}:resumed:")
    by_key = {m["key"]: m for m in messages}
    milestone = by_key[f"run:{md2}:milestone:50"]
    assert milestone["title"] == "md2: reshape 50 % done"
    assert "ETA " in milestone["body"] and "(between " in milestone["body"]
    assert milestone["click"] == "http://nas.local:8080/#array-md2"
    started = by_key[f"run:{md3}:started"]
    assert started["title"] == "md3: reshape started (SHR expansion, array 2)"
    # md2's end says what comes next and how long it takes (the job's phase to come)
    assert by_key[f"run:{md2}:finished"]["title"].startswith("md2 done; md3 next, about "), by_key[
        f"run:{md2}:finished"
    ]["title"]
    assert by_key[keys[7]]["priority"] == "high" and "stalled" in by_key[keys[7]]["title"]
    assert by_key[f"pool:{md2}:finished"]["title"] == "SHR expansion finished"
    assert len(set(keys)) == len(keys)


def test_a_hook_that_runs_late_still_sees_one_expansion(tmp_path: Path):
    """The notifier judges a tick by the tick's own time. Its clock here runs two hours behind
    the sampler's ticks (a busy box; the demo at 50000x): md2's end and md3's start in one tick
    must still be one SHR expansion, with one message for the whole pool."""
    sim = Simulator(tmp_path / "tree", seed=3)
    settings = Settings(
        proc_root=tmp_path / "tree/proc", sys_root=tmp_path / "tree/sys", db=tmp_path / "m.db"
    )
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, lambda: sim.state.sim_time)
    late = lambda: sim.state.sim_time + 7200  # noqa: E731
    notifier = Notifier(db.connect(settings.db), sampler.host, late, settings)
    kinds = []
    for _ in range(4000):
        sim.advance(1800)
        kinds += [(m.array, m.kind) for m in notifier.on_tick(sampler.sample_once())]
        if sim.reshaping == "md3" and sim.finished:
            break
    for _ in range(3):
        sim.advance(120)
        kinds += [(m.array, m.kind) for m in notifier.on_tick(sampler.sample_once())]
    assert ("md3", "started") in kinds and ("md3", "finished") in kinds
    assert kinds[-1] == (None, "pool_finished")


def _run_ids(conn) -> tuple[int, int]:
    rows = conn.execute("SELECT id, array FROM runs ORDER BY id").fetchall()
    return next(r["id"] for r in rows if r["array"] == "md2"), next(
        r["id"] for r in rows if r["array"] == "md3"
    )


HEALTHY_MD3 = (
    "md3 : active raid5 sdb6[1] sdc6[2] sda6[0]\n"
    "      976758848 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/3] [UUU]\n"
)
# md3 of an SHR pool after two of its members failed (md.c md_seq_show, Linux 6.12+).
BROKEN_MD3 = (
    "md3 : broken raid5 sdb6[1](F) sdc6[2](F) sda6[0]\n"
    "      976758848 blocks super 1.2 level 5, 64k chunk, algorithm 2 [3/1] [U__]\n"
)


def test_an_array_md_marks_broken_is_the_most_urgent_message(tree, conn, tmp_path: Path):
    tree.mdstat(mdstat_text(HEALTHY_MD3))
    tree.md("md3")
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "mdboost.db")
    sampler = Sampler(Host(tree.proc, tree.sys), conn, lambda: 1000.0)
    notifier = Notifier(conn, sampler.host, lambda: 1000.0, settings)
    assert notifier.on_tick(sampler.sample_once()) == []
    tree.mdstat(mdstat_text(BROKEN_MD3))
    tree.md("md3", degraded="2")
    found = notifier.on_tick(sampler.sample_once())
    assert [m.kind for m in found] == ["broken", "member_failed", "member_failed", "degraded"]
    assert {m.priority for m in found} == {"urgent"}
    assert found[0].title == "md3 is broken" and found[3].title == "md3 is degraded [U__]"


def test_a_tick_that_changes_nothing_writes_nothing(tree, conn, tmp_path: Path):
    """A daemon you forget is there: while nothing changes, the notifier's state is
    not rewritten each tick (a row, a WAL page and a checkpoint's work a tick, for nothing). The
    first tick saves it, and a change saves it again."""
    tree.mdstat(mdstat_text(HEALTHY_MD3))
    tree.md("md3")
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "mdboost.db")
    now = [1000.0]
    sampler = Sampler(Host(tree.proc, tree.sys), conn, lambda: now[0])
    notifier = Notifier(conn, sampler.host, lambda: now[0], settings)

    def state_row() -> str:
        return str(conn.execute("SELECT state FROM notify_state WHERE id = 1").fetchone()[0])

    notifier.on_tick(sampler.sample_once())
    first = state_row()
    for _ in range(3):
        now[0] += 60
        tick = sampler.sample_once()
        before = conn.total_changes  # rows this connection wrote: the notifier's alone from here
        assert notifier.on_tick(tick) == []
        assert conn.total_changes == before
    assert state_row() == first
    tree.mdstat(mdstat_text(BROKEN_MD3))
    tree.md("md3", degraded="2")
    now[0] += 60
    assert notifier.on_tick(sampler.sample_once())
    assert state_row() != first


def test_a_message_says_the_finish_and_the_verdict_the_tick_made(tree, conn, tmp_path: Path):
    """The ETA in a message and the verdict a push says come from the present the sampler's
    tick built, boost's estimate already judged in it: the notifier's own connection asks
    nothing of boost's measurements (it asked them for each array, each tick)."""
    syncing_box(tree)
    settings = Settings(proc_root=tree.proc, sys_root=tree.sys, db=tmp_path / "mdboost.db")
    now = [1000.0]
    sampler = Sampler(Host(tree.proc, tree.sys), conn, lambda: now[0])
    present = SnapshotBuilder(sampler.host, conn)
    own = db.connect(settings.db)
    notifier = Notifier(own, sampler.host, lambda: now[0], settings, snapshot_builder=present)
    asked: list[str] = []
    own.set_trace_callback(asked.append)
    keys: list[str] = []
    for step in range(12):
        done = 1_000 + step * 30_000
        tree.mdstat(mdstat_text(raid5(progress=progress("reshape", done, RESHAPE_TOTAL)), raid1()))
        tick = sampler.sample_once()
        present.update(tick)
        keys += [m.key for m in notifier.on_tick(tick)]
        now[0] += 5.0
    assert [k for k in keys if k.endswith(":started")], keys
    estimate = ("SELECT ratio FROM", "SELECT array, ratio", "before_kb_s FROM", "action, speed_sum")
    assert [s for s in asked if any(ask in s for ask in estimate)] == []
    md2 = present.snapshot.array("md2")
    assert md2 is not None and md2.boost is not None  # an estimate stood beside the messages


def test_the_notifier_sees_each_drift_and_slower_event_once(box, tmp_path: Path):
    """A tick asks for the events after the last it saw, up to the newest: a drift and a put-back
    preset are observed once, another kind of event never, and a tick that adds none sees none."""
    settings = Settings(proc_root=box.proc, sys_root=box.sys, db=tmp_path / "mdboost.db")
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    clock = lambda: 1_700_000_000.0  # noqa: E731
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, clock)
    notifier = Notifier(db.connect(settings.db), sampler.host, clock, settings)
    history.add_event(conn, 1.0, "md2", None, "drift", {"key": "old@md2"})
    notifier.on_tick(sampler.sample_once())  # the first tick: what was there is the baseline
    history.add_event(conn, 2.0, "md2", None, "drift", {"key": "stripe_cache_size@md2"})
    history.add_event(conn, 3.0, "md2", None, "apply", {"preset": "boost"})
    history.add_event(conn, 4.0, "md2", None, "slower", {"preset": "boost", "sentence": "s"})
    seen = notifier.observe(sampler.sample_once())
    assert [(d.event_id, d.key) for d in seen.drift] == [(2, "stripe_cache_size@md2")]
    assert [(s.event_id, s.preset) for s in seen.slower] == [(4, "boost")]
    assert seen.last_event_id == 4
    notifier.on_tick(sampler.sample_once())
    again = notifier.observe(sampler.sample_once())
    assert (again.drift, again.slower, again.last_event_id) == ((), (), 4)


def test_the_notifier_sees_the_session_the_present_shows(box, tmp_path: Path):
    """Whether a session is open comes from the present the tick built: its arrays are read
    only then, for the "boost left on" message."""
    settings = Settings(proc_root=box.proc, sys_root=box.sys, db=tmp_path / "mdboost.db")
    conn = db.connect(settings.db)
    db.migrate(conn, settings.migrations_dir)
    clock = lambda: 1_700_000_000.0  # noqa: E731
    sampler = Sampler(Host(settings.proc_root, settings.sys_root), conn, clock)
    notifier = Notifier(db.connect(settings.db), sampler.host, clock, settings)
    tick = sampler.sample_once()
    notifier.on_tick(tick)
    assert notifier.observe(tick).boost_session is None
    cache = KnobChange("stripe_cache_size@md2", "stripe_cache_size", "md2", "", "256", "4096", "")
    session, op = journal.begin_apply(conn, "boost", ["md2"], [cache], clock())
    journal.finish_apply(conn, session, op, "boost", ["md2"], [cache], clock())
    tick = sampler.sample_once()
    notifier.on_tick(tick)
    assert notifier.observe(tick).boost_session == (session, ("md2",))
