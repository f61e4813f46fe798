from app import history


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
    conn.executemany(
        "INSERT INTO samples (ts, array, run_id, done_blocks, total_blocks, speed_kb_s) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    picked = history.samples(conn, "md2", points=200)
    assert 150 <= len(picked) <= 200
    speeds = [s["speed_kb_s"] for s in picked]
    assert 1 in speeds and 99999 in speeds
    assert [s["ts"] for s in picked] == sorted(s["ts"] for s in picked)
    assert picked[0]["ts"] == 0.0
    window = history.samples(conn, "md2", since=1000, until=1100, points=500)
    assert [s["ts"] for s in window] == [1000 + 5 * k for k in range(21)]


def test_runs_carry_average_speed_and_duration(conn):
    conn.execute("INSERT INTO runs VALUES (1, 'md2', 'reshape', 100, 400, 'completed', 10)")
    conn.executemany(
        "INSERT INTO samples (ts, array, run_id, percent, speed_kb_s) VALUES (?, 'md2', 1, ?, ?)",
        [(100, 10.0, 1000), (200, 50.0, 3000)],
    )
    (run,) = history.runs(conn)
    assert (run["duration_s"], run["avg_speed_kb_s"], run["last_percent"]) == (300, 2000, 50.0)
    assert history.run(conn, 2) is None
