import random

import pytest

from app.store import db, history, rollup
from tests import PROJECT_ROOT


def test_downsampling_keeps_at_most_n_points_and_the_extremes(conn):
    conn.execute("INSERT INTO runs (id, array, action, started) VALUES (1, 'md2', 'reshape', 0)")
    rows = []
    for i in range(10_000):
        speed = 6000 + (i % 7) * 10
        if i == 4321:
            speed = 1  # one dip
        if i == 8765:
            speed = 99999  # one burst
        rows.append((i * 5.0, "md2", 1, i * 100, 10**7, speed))
    with db.write_transaction(conn):  # one commit, not 10,000 fsyncs
        conn.executemany(
            "INSERT INTO samples (ts, array, run_id, done_blocks, total_blocks, speed_kb_s) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
    picked = history.samples(conn, "md2", points=200)
    assert 150 <= len(picked) <= 200
    speeds = [s.speed_kb_s for s in picked]
    assert 1 in speeds and 99999 in speeds
    assert [s.ts for s in picked] == sorted(s.ts for s in picked)
    assert picked[0].ts == 0.0
    window = history.samples(conn, "md2", since=1000, until=1100, points=500)
    assert [s.ts for s in window] == [1000 + 5 * k for k in range(21)]


def test_the_run_summary_migration_fills_runs_recorded_before_it(tmp_path):
    """0012 computes each old run's summary from its samples; the sampler keeps it from then."""
    before = tmp_path / "before"
    before.mkdir()
    for script in sorted((PROJECT_ROOT / "migrations").glob("*.sql")):
        if script.name < "0012":
            (before / script.name).write_text(script.read_text())
    conn = db.connect(tmp_path / "old.db")
    db.migrate(conn, before)
    conn.execute("INSERT INTO runs VALUES (1, 'md2', 'reshape', 100, 400, 'completed', 10)")
    conn.executemany(
        "INSERT INTO samples (ts, array, run_id, percent, speed_kb_s) VALUES (?, 'md2', 1, ?, ?)",
        [(100, 10.0, 1000), (200, 50.0, 3000), (300, None, None)],
    )
    assert (
        db.migrate(conn, PROJECT_ROOT / "migrations")[0] == "0012_run_summary.sql"
    )  # then later ones
    (run,) = history.runs(conn)
    assert (run.duration_s, run.avg_speed_kb_s, run.last_percent) == (300, 2000, 50.0)
    assert history.run(conn, 2) is None
    conn.close()


ROLLUP_COLUMNS = "slowest_id, slowest_kb_s, slowest_ts, fastest_id, fastest_kb_s, fastest_ts"


def generated_history(conn, days: float = 1.0) -> float:
    """md2 every ~5 s with tied and missing speeds, md3 every minute; returns the first ts."""
    rng = random.Random(5)
    start = 1_700_000_000.3
    conn.execute("INSERT INTO runs (id, array, action, started, finished, outcome, total_blocks) VALUES (1, 'md2', 'reshape', ?, ?, 'completed', 10)",
                 (start, start + 86400))  # fmt: skip
    rows = []
    for i in range(int(days * 86400 / 5)):
        ts = start + i * 5 + rng.random() * 0.01
        speed = None if rng.random() < 0.1 else rng.randrange(50) * 100
        rows.append((ts, "md2", 1 if ts < start + 86400 else None, speed))
        if i % 12 == 0:
            rows.append((ts, "md3", None, rng.randrange(50) * 100))
    with db.write_transaction(conn):
        conn.executemany(
            "INSERT INTO samples (ts, array, run_id, speed_kb_s) VALUES (?, ?, ?, ?)", rows
        )
    return start


def rollup_from_samples(conn) -> dict[tuple[str, int, int], tuple[object, ...]]:
    """The rollup computed from scratch: per period, the first sample by (speed, ts, id) and the
    first by (-speed, ts, id), NULL speed counting as -1."""
    levels = [r[0] for r in conn.execute("SELECT period_s FROM sample_rollup_levels")]
    groups: dict[tuple[str, int, int], list[tuple[int, float, int]]] = {}
    for sample_id, array, ts, speed in conn.execute(
        "SELECT id, array, ts, speed_kb_s FROM samples"
    ):
        for period_s in levels:
            key = (array, period_s, int(ts / period_s))
            groups.setdefault(key, []).append((-1 if speed is None else speed, ts, sample_id))
    rollup = {}
    for key, members in groups.items():
        slowest = min(members)
        fastest = min(members, key=lambda m: (-m[0], m[1], m[2]))
        rollup[key] = (slowest[2], slowest[0], slowest[1], fastest[2], fastest[0], fastest[1])
    return rollup


def stored_rollup(conn) -> dict[tuple[str, int, int], tuple[object, ...]]:
    return {
        (r[0], r[1], r[2]): tuple(r[3:])
        for r in conn.execute(
            f"SELECT array, period_s, period, {ROLLUP_COLUMNS} FROM sample_rollup"
        )
    }


def picks_from_raw(conn, array, since, until, points) -> list[float]:
    """The ts of the samples the rollup path must return, computed from raw samples alone."""
    raw = conn.execute(
        "SELECT id, ts, speed_kb_s FROM samples WHERE array = ? AND ts >= ? AND ts <= ?",
        (array, since, until),
    ).fetchall()
    first, last = min(r[1] for r in raw), max(r[1] for r in raw)
    buckets = points // 2
    period_s = next(p for p in (10800, 900, 60) if int(last / p) - int(first / p) + 1 >= buckets)
    first_period, periods = int(first / period_s), int(last / period_s) - int(first / period_s) + 1
    by_bucket: dict[int, list[tuple[int, float, int]]] = {}
    for sample_id, ts, speed in raw:
        bucket = (int(ts / period_s) - first_period) * buckets // periods
        by_bucket.setdefault(bucket, []).append((-1 if speed is None else speed, ts, sample_id))
    picked = set()
    for members in by_bucket.values():
        picked.add(min(members)[1])
        picked.add(min(members, key=lambda m: (-m[0], m[1], m[2]))[1])
    return sorted(picked)


def test_the_rollup_is_kept_by_every_insert(conn):
    generated_history(conn, days=0.5)
    assert stored_rollup(conn) == rollup_from_samples(conn)


@pytest.mark.parametrize(
    ("since_s", "until_s", "points"),
    [
        (0, 1e9, 12),  # 3 h periods
        (0, 1e9, 200),  # 15 min periods
        (0, 1e9, 500),  # 1 min periods
        (3333.3, 80_000.7, 300),  # cut inside periods at both ends
        (30_000.2, 60_000.9, 100),
    ],
)
def test_rollup_picks_equal_the_raw_computation(conn, since_s, until_s, points):
    start = generated_history(conn)
    since, until = start + since_s, start + until_s
    picked = history.samples(conn, "md2", since, until, points)
    assert [s.ts for s in picked] == picks_from_raw(conn, "md2", since, until, points)
    assert len(picked) <= points


def test_downsampling_rebuilds_the_rollup_it_touches(conn):
    start = generated_history(conn)
    removed = rollup.downsample(conn, older_than=start + 50_000)
    assert removed > 0
    assert stored_rollup(conn) == rollup_from_samples(conn)
    for points in (12, 200, 500):
        picked = history.samples(conn, "md2", points=points)
        assert [s.ts for s in picked] == picks_from_raw(conn, "md2", 0, 1e18, points)


def test_keep_days_deletes_older_samples_and_keeps_runs_and_the_rollup_right(conn):
    """MDBOOST_KEEP_DAYS: samples before the cut go, the run and its summary stay,
    an open run keeps all of its samples, and the rollup matches what is left."""
    start = generated_history(conn)
    conn.execute("INSERT INTO runs (id, array, action, started) VALUES (2, 'md4', 'check', ?)",
                 (start,))  # fmt: skip
    with db.write_transaction(conn):
        conn.executemany(
            "INSERT INTO samples (ts, array, run_id, speed_kb_s) VALUES (?, 'md4', 2, 100)",
            [(start + i * 60.0,) for i in range(100)],
        )
    cut = start + 40_000
    removed = rollup.downsample(conn, older_than=start + 50_000, drop_before=cut)
    assert removed > 0
    before_cut = conn.execute(
        "SELECT array, COUNT(*) FROM samples WHERE ts < ? GROUP BY array", (cut,)
    ).fetchall()
    assert [tuple(r) for r in before_cut] == [("md4", 100)]  # only the open run's
    between = conn.execute("SELECT COUNT(*) FROM samples WHERE array = 'md2' AND ts >= ?", (cut,))
    assert between.fetchone()[0] > 0
    assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    assert stored_rollup(conn) == rollup_from_samples(conn)


def test_the_newest_sample_of_each_array_in_one_statement(conn):
    conn.executemany(
        "INSERT INTO samples (ts, array, state, percent, degraded) VALUES (?, ?, 'active', ?, 0)",
        [(1.0, "md2", 10.0), (3.0, "md2", 30.0), (2.0, "md2", 20.0), (5.0, "md0", None)],
    )
    asked: list[str] = []
    conn.set_trace_callback(asked.append)
    found = history.last_samples(conn, ["md2", "md0", "md9"])
    conn.set_trace_callback(None)
    assert {name: s.percent for name, s in found.items()} == {"md2": 30.0, "md0": None}
    assert len(asked) == 1
    assert history.last_samples(conn, []) == {}
