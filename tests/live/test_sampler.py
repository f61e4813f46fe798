import asyncio
import sqlite3

import pytest

from app.kernel.host import Host
from app.live import sampler
from app.live.tick import Tick
from app.store import db, history, rollup
from tests.kernel_tree import KernelTree, mdstat_text, progress, raid1, raid5

TOTAL = 1953494784


class ManualClock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def make_sampler(tree: KernelTree, conn: sqlite3.Connection, clock: ManualClock) -> sampler.Sampler:
    return sampler.Sampler(Host(tree.proc, tree.sys), conn, clock)


def reshaping(tree: KernelTree, done: int, action: str = "reshape") -> None:
    tree.mdstat(mdstat_text(raid5(progress=progress(action, done, TOTAL)), raid1()))
    tree.md("md2", sync_action=action, sync_speed="6000", stripe_cache_size="256")
    tree.md("md0")


def idle(tree: KernelTree, status: str = "UUUU") -> None:
    tree.mdstat(mdstat_text(raid5(status=status), raid1()))
    tree.md("md2", stripe_cache_size="256")
    tree.md("md0")


def runs(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return [
        (r["array"], r["action"], r["outcome"])
        for r in conn.execute("SELECT * FROM runs ORDER BY id")
    ]


def test_one_row_per_array_per_tick_with_kernel_values(tree, conn):
    reshaping(tree, 491263360)
    clock = ManualClock()
    tick = make_sampler(tree, conn, clock).sample_once()
    assert tick.error is None and tick.any_running and tick.written == 2
    rows = {r["array"]: r for r in conn.execute("SELECT * FROM samples")}
    assert set(rows) == {"md2", "md0"}
    md2 = rows["md2"]
    assert (md2["action"], md2["done_blocks"], md2["total_blocks"]) == ("reshape", 491263360, TOTAL)
    assert (md2["percent"], md2["speed_kb_s"], md2["stripe_cache_size"]) == (25.1, 6000, 256)
    assert (md2["speed_min_kb_s"], md2["speed_max_kb_s"]) == (1000, 200000)
    assert rows["md0"]["action"] is None and rows["md0"]["run_id"] is None


def test_the_run_summary_follows_every_sample_it_stores(tree, conn):
    """GET /api/runs reads the run's row: the average speed and last percent of its samples."""
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    for done, speed in ((100, "4000"), (TOTAL // 4, "8000"), (TOTAL // 2, "6000")):
        reshaping(tree, done)
        tree.write("proc/mdstat", tree.read("proc/mdstat").replace("6000K/sec", f"{speed}K/sec"))
        s.sample_once()
        clock.now += 5
    (run,) = history.runs(conn)
    expected = conn.execute(
        "SELECT AVG(speed_kb_s), MAX(percent) FROM samples WHERE run_id = ?", (run.id,)
    ).fetchone()
    assert (run.avg_speed_kb_s, run.last_percent) == tuple(expected)
    assert run.last_percent == 50.0


def test_a_run_spans_ticks_and_completes_when_the_array_goes_idle(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    for done in (100, TOTAL // 2, TOTAL - 1000):
        reshaping(tree, done)
        s.sample_once()
        clock.now += 5
    idle(tree)
    tick = s.sample_once()
    assert runs(conn) == [("md2", "reshape", "completed")]
    assert [f.outcome for f in tick.finished_runs] == ["completed"]
    run_ids = {r[0] for r in conn.execute("SELECT run_id FROM samples WHERE array='md2'")}
    assert len(run_ids - {None}) == 1


def test_stopping_halfway_is_interrupted_and_a_new_action_is_a_new_run(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    reshaping(tree, TOTAL // 3, action="check")
    s.sample_once()
    clock.now += 5
    reshaping(tree, TOTAL // 3 + 10, action="resync")
    s.sample_once()
    clock.now += 5
    idle(tree)
    s.sample_once()
    assert runs(conn) == [("md2", "check", "interrupted"), ("md2", "resync", "interrupted")]


def test_progress_falling_back_to_zero_is_a_restart(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    reshaping(tree, TOTAL // 2, action="resync")
    s.sample_once()
    clock.now += 5
    reshaping(tree, 1000, action="resync")
    s.sample_once()
    assert runs(conn) == [("md2", "resync", "restarted"), ("md2", "resync", "running")]


def test_a_vanished_array_closes_its_run(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    reshaping(tree, 5000)
    s.sample_once()
    tree.mdstat(mdstat_text(raid1()))
    s.sample_once()
    assert runs(conn) == [("md2", "reshape", "vanished")]


def test_recovery_completes_by_degraded_count_not_by_percent(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    reshaping(tree, TOTAL // 2, action="recovery")
    s.sample_once()
    idle(tree)
    tree.md("md2", degraded="0")
    s.sample_once()
    assert runs(conn) == [("md2", "recovery", "completed")]


def test_a_restart_of_the_app_continues_the_open_run(tree, conn, tmp_path):
    clock = ManualClock()
    reshaping(tree, 1000)
    make_sampler(tree, conn, clock).sample_once()
    second = db.connect(tmp_path / "mdboost.db")
    clock.now += 60
    reshaping(tree, 9000)
    make_sampler(tree, second, clock).sample_once()
    assert runs(second) == [("md2", "reshape", "running")]
    assert (
        second.execute("SELECT COUNT(DISTINCT run_id) FROM samples WHERE array='md2'").fetchone()[0]
        == 1
    )


def test_bad_mdstat_is_an_error_for_this_tick_only(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    tree.write("proc/mdstat", "\x00\x01binary")
    tick = s.sample_once()
    assert tick.error is not None and "binary" in tick.error
    reshaping(tree, 1000)
    assert s.sample_once().error is None
    assert conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 2


def test_no_mdstat_means_no_arrays_not_an_error(tree, conn):
    tick = make_sampler(tree, conn, ManualClock()).sample_once()
    assert tick.error is None and tick.written == 0


def test_a_full_database_keeps_samples_in_memory_and_writes_them_later(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    reshaping(tree, 1000)
    s.sample_once()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite now answers SQLITE_FULL
    errors = []
    for i in range(200):
        clock.now += 5
        reshaping(tree, 2000 + i)
        errors.append(s.sample_once().error)
    failed = [e for e in errors if e is not None]
    assert len(failed) > 100 and all("full" in e for e in failed)
    assert len(s.pending) == len(failed)
    conn.execute("PRAGMA max_page_count = 1073741823")
    clock.now += 5
    assert s.sample_once().error is None
    assert s.pending == []
    done = [r[0] for r in conn.execute("SELECT done_blocks FROM samples WHERE array='md2'")]
    assert done == [1000, *range(2000, 2200), 2199]


def test_downsampling_keeps_one_sample_per_minute_of_finished_runs_only(conn):
    conn.execute(
        "INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) VALUES (1, 'md2', 'reshape', 0, 7200, 'completed', 100)"
    )
    conn.execute("INSERT INTO runs (id, array, action, started) VALUES (2, 'md3', 'check', 0)")
    for i in range(1440):  # two hours at 5 s
        ts = i * 5.0
        conn.execute("INSERT INTO samples (ts, array, run_id) VALUES (?, 'md2', 1)", (ts,))
        conn.execute("INSERT INTO samples (ts, array, run_id) VALUES (?, 'md3', 2)", (ts,))
    removed = rollup.downsample(conn, older_than=3600.0)
    md2 = [r[0] for r in conn.execute("SELECT ts FROM samples WHERE array='md2' ORDER BY ts")]
    assert removed == 720 - 60
    assert md2[:60] == [m * 60.0 for m in range(60)]  # the first hour: one per minute
    assert len(md2) == 60 + 720  # the recent hour untouched
    assert conn.execute("SELECT COUNT(*) FROM samples WHERE array='md3'").fetchone()[0] == 1440


def test_the_loop_survives_a_failing_tick_and_stops_on_request(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    reshaping(tree, 1000)
    seen: list[Tick] = []
    stop = asyncio.Event()
    original = s.sample_once

    def flaky() -> Tick:
        clock.now += 5
        if len(seen) == 1:
            seen.append(Tick(error="boom"))
            raise RuntimeError("injected failure")
        return original()

    def on_tick(tick: Tick) -> None:
        seen.append(tick)
        if len(seen) >= 4:
            stop.set()

    s.sample_once = flaky  # type: ignore[method-assign]
    asyncio.run(sampler.run_forever(s, stop, lambda tick: 0.0, on_tick))
    assert len(seen) >= 4
    assert conn.execute("SELECT COUNT(*) FROM samples WHERE array='md2'").fetchone()[0] >= 2


def test_interval_is_fast_while_syncing_and_slow_when_idle():
    busy, quiet = Tick(any_running=True), Tick(any_running=False)
    assert sampler.interval_seconds(busy, None, 5, 60) == 5
    assert sampler.interval_seconds(quiet, None, 5, 60) == 60
    assert sampler.interval_seconds(quiet, 2.5, 5, 60) == 2.5


def test_a_run_that_starts_while_the_disk_is_full_gets_its_true_start_time(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    idle(tree)
    s.sample_once()
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    first_failed_reshape = None
    for i in range(300):
        clock.now += 5
        reshaping(tree, 1000 + i)
        if s.sample_once().error and first_failed_reshape is None:
            first_failed_reshape = clock.now
    assert first_failed_reshape is not None
    conn.execute("PRAGMA max_page_count = 1073741823")
    clock.now += 5
    s.sample_once()
    started = conn.execute("SELECT started FROM runs WHERE array='md2'").fetchall()
    assert len(started) == 1 and started[0][0] <= first_failed_reshape
    orphans = conn.execute(
        "SELECT COUNT(*) FROM samples WHERE array='md2' AND action IS NOT NULL AND run_id IS NULL"
    ).fetchone()[0]
    assert orphans == 0


def test_a_short_check_that_ends_between_ticks_is_completed_not_interrupted(tree, conn):
    """Real kernel (tests/realkernel): the last progress line of a fast check can read 60 %."""
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    tree.mdstat(mdstat_text(raid5(progress=progress("check", 600_000, 1_000_000, 200_000))))
    tree.md("md2", sync_action="check")
    s.sample_once()
    clock.now += 5  # 5 s at 200 MB/s covers the 400 MB left
    idle(tree)
    s.sample_once()
    assert runs(conn) == [("md2", "check", "completed")]


@pytest.mark.parametrize(
    ("second_done", "outcome"), [(600_000, "completed"), (200_000, "interrupted")]
)
def test_a_check_is_judged_by_its_own_pace_when_mds_speed_lags(tree, conn, second_done, outcome):
    """md's speed= averages over its last marks: seconds into a short check on a real kernel it read
    a tenth of the pace the check ended at, and a finished check was saved as interrupted."""
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    tree.md("md2", sync_action="check")
    for done in (100_000, second_done):
        tree.mdstat(mdstat_text(raid5(progress=progress("check", done, 1_000_000, 10_000))))
        s.sample_once()
        clock.now += 5
    idle(tree)
    s.sample_once()
    # 500 MB in 5 s covers the 400 MB left; 20 MB in 5 s does not cover 800 MB.
    assert runs(conn) == [("md2", "check", outcome)]


@pytest.mark.parametrize("lagging", [False, True])
def test_a_check_under_a_max_limit_raised_since_can_end_at_the_new_one(tree, conn, lagging):
    """Seen on a real kernel: a check crawling under a 1 MB/s max (md's speed= still climbing
    towards it) was let go to 20 MB/s and ended before the next tick, or the one after, whose
    speed= still read the crawl's pace; judged at that pace it was saved as interrupted."""
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    tree.write("proc/sys/dev/raid/speed_limit_max", "1000")
    tree.md("md2", sync_action="check", sync_speed_max="1000 (system)")
    for done, speed in ((2_000, 300), (7_000, 600)):
        tree.mdstat(mdstat_text(raid5(progress=progress("check", done, 1_000_000, speed))))
        s.sample_once()
        clock.now += 5
    tree.write("proc/sys/dev/raid/speed_limit_max", "200000")
    tree.md("md2", sync_action="check", sync_speed_max="200000 (system)")
    if lagging:  # a tick after the raise: md's speed= still averages the crawl
        tree.mdstat(mdstat_text(raid5(progress=progress("check", 17_000, 1_000_000, 900))))
        s.sample_once()
        clock.now += 5
    idle(tree)
    s.sample_once()
    assert runs(conn) == [("md2", "check", "completed")]


def test_a_check_md_kept_the_position_of_is_interrupted(tree, conn):
    """md keeps where a stopped check got to in sync_min (sectors), to go on from there; a check
    that ends at the end puts it back to 0. Its pace could have finished it, yet it was stopped."""
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    tree.mdstat(mdstat_text(raid5(progress=progress("check", 600_000, 1_000_000, 200_000))))
    tree.md("md2", sync_action="check", sync_min="0")
    s.sample_once()
    clock.now += 5
    idle(tree)
    tree.md("md2", sync_min="1400000")
    s.sample_once()
    assert runs(conn) == [("md2", "check", "interrupted")]


def test_md_says_whether_a_resync_or_reshape_finished(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    for action, attr, left_at, outcome in (
        ("resync", "resync_start", "none", "completed"),
        ("resync", "resync_start", "81920", "interrupted"),
        ("reshape", "reshape_position", "none", "completed"),
        ("reshape", "reshape_position", "4096000", "interrupted"),
    ):
        reshaping(tree, TOTAL // 3, action=action)  # a third done: the sample alone says little
        s.sample_once()
        clock.now += 5
        idle(tree)
        tree.md("md2", **{attr: left_at})
        s.sample_once()
        clock.now += 5
        assert runs(conn)[-1] == ("md2", action, outcome)


def stored(conn: sqlite3.Connection, array: str) -> list[float]:
    rows = conn.execute("SELECT ts FROM samples WHERE array = ? ORDER BY ts", (array,))
    return [r[0] for r in rows]


def test_an_idle_array_stores_only_what_changes_and_an_hourly_heartbeat(tree, conn):
    """A row a minute of "nothing happened" would be ~150 MB a year for three arrays."""
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    idle(tree)
    start = clock.now
    for minute in range(181):  # three hours at the idle 60 s
        clock.now = start + minute * 60
        if minute == 30:
            tree.md("md2", stripe_cache_size="4096")  # a knob
        if minute == 50:
            tree.md("md2", stripe_cache_size="4096", mismatch_cnt="128")  # a check's result
        if minute == 70:
            tree.mdstat(mdstat_text(raid5(status="UUU_"), raid1()))  # a member gone
        assert s.sample_once().written == 2
    hours = [start + 3600 * h for h in range(4)]
    assert stored(conn, "md0") == hours
    minutes = [0, 30, 50, 70, 130]  # then the heartbeat an hour after the last change
    assert stored(conn, "md2") == [start + 60 * m for m in minutes]
    row = conn.execute("SELECT * FROM samples WHERE array='md2' ORDER BY ts DESC").fetchone()
    assert (row["stripe_cache_size"], row["mismatch_cnt"], row["status"]) == (4096, 128, "UUU_")


def test_every_sample_of_a_run_is_stored_and_the_first_idle_one_after_it(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    idle(tree)
    s.sample_once()
    for done in range(1000, 1010):
        clock.now += 5
        reshaping(tree, done)
        s.sample_once()
    for _ in range(3):
        clock.now += 60
        idle(tree)
        s.sample_once()
    md2 = conn.execute("SELECT run_id, done_blocks FROM samples WHERE array='md2' ORDER BY ts")
    assert [tuple(r) for r in md2] == [
        (None, None),
        *((1, d) for d in range(1000, 1010)),
        (None, None),
    ]


def test_an_idle_sample_that_could_not_be_written_is_stored_when_the_disk_has_room(tree, conn):
    clock = ManualClock()
    s = make_sampler(tree, conn, clock)
    idle(tree)
    s.sample_once()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLITE_FULL from now on
    errors = []
    for _ in range(100):  # until the change no longer fits in the file's free pages
        clock.now += 60
        tree.md("md2", stripe_cache_size=str(4096 + len(errors)))
        errors.append(s.sample_once().error)
        if errors[-1] is not None:
            break
    assert errors[-1] is not None and "full" in errors[-1]
    conn.execute("PRAGMA max_page_count = 1073741823")
    clock.now += 60
    assert s.sample_once().error is None
    caches = [r[0] for r in conn.execute("SELECT stripe_cache_size FROM samples WHERE array='md2'")]
    assert caches == [256, *range(4096, 4096 + len(errors))]


def test_the_member_disks_sizes_ride_on_the_tick_and_are_read_when_members_change(tree, conn):
    """/sys/block/<disk>/size is read once for a set of members, not every tick (a disk's size
    changes only when it is swapped, and then the members change)."""
    idle(tree)
    for disk in ("sda", "sdb", "sdc", "sdd", "sde"):
        for part in (1, 5):
            (tree.sys / "block" / disk / f"{disk}{part}").mkdir(parents=True)
        tree.write(f"sys/block/{disk}/size", "3907029168\n")  # 2 TB
        tree.write(f"sys/block/{disk}/queue/rotational", "1\n" if disk != "sdb" else "0\n")
    sampled = make_sampler(tree, conn, ManualClock())
    two_tb = 3907029168 // 2
    tick = sampled.sample_once()
    assert tick.disk_kib == dict.fromkeys(("sda", "sdb", "sdc", "sdd"), two_tb)
    assert tick.disk_rotational == {"sda": True, "sdb": False, "sdc": True, "sdd": True}
    tree.write("sys/block/sdd/size", "7814037168\n")  # unseen until the members change
    assert sampled.sample_once().disk_kib["sdd"] == two_tb
    tree.mdstat(tree.read("proc/mdstat").replace("sdd1[3]", "sdd1[3] sde1[4](S)"))
    assert sampled.sample_once().disk_kib == dict.fromkeys(("sda", "sdb", "sdc"), two_tb) | {
        "sdd": 7814037168 // 2,
        "sde": two_tb,
    }


def test_the_first_tick_only_measures_and_the_next_one_thins_and_keeps_days(tree, conn):
    """Start-up awaits the first tick: it measures the file for the footer, and leaves the
    thinning, MDBOOST_KEEP_DAYS and an old file's conversion to the loop, which takes their
    steps between the next ticks."""
    clock = ManualClock(start=1_700_000_000.0 + 500 * 86400)
    old = clock.now - 450 * 86400  # past the 400 days kept
    conn.execute("INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) VALUES (1, 'md2', 'check', ?, ?, 'completed', 100)",
                 (old, old + 60))  # fmt: skip
    conn.execute("INSERT INTO samples (ts, array, run_id) VALUES (?, 'md2', 1)", (old,))
    idle(tree)
    sampling = sampler.Sampler(Host(tree.proc, tree.sys), conn, clock, keep_days=400)
    sampling.sample_once()
    assert sampling.size is not None and sampling.size.file_bytes > 0
    assert conn.execute("SELECT COUNT(*) FROM samples WHERE ts = ?", (old,)).fetchone()[0] == 1
    clock.now += 5
    sampling.sample_once()
    assert sampling.maintenance is not None  # begun, not done: sampling never waits for it
    while sampling.maintenance_step():
        pass
    assert conn.execute("SELECT COUNT(*) FROM samples WHERE ts = ?", (old,)).fetchone()[0] == 0
    assert runs(conn) == [("md2", "check", "completed")]  # the run and its summary stay
    assert sampling.size.measured_at == clock.now
