"""Space comes back: after downsampling, SQLite's free pages go back to the filesystem,
in new files and, after a one-time conversion, in files made before incremental auto-vacuum."""

import logging
import sqlite3
from pathlib import Path

import pytest

from app.store import db, rollup
from tests import PROJECT_ROOT
from tests.conftest import SmallDisk

DAY_S = 86400.0
START = 1_700_000_000.0


def old_file(path: Path) -> sqlite3.Connection:
    """A database as mdboost made it before incremental auto-vacuum: SQLite's defaults."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    db.migrate(conn, PROJECT_ROOT / "migrations")
    return conn


def five_second_samples(conn: sqlite3.Connection, days: float, arrays: int = 3) -> int:
    """Idle samples every 5 s (as older versions of the sampler stored them), for `arrays`."""
    rows = [
        (START + i * 5.0, f"md{a}", "active", "UUUU", 0, 256, 1000, 200000)
        for i in range(int(days * DAY_S / 5))
        for a in range(arrays)
    ]
    with db.write_transaction(conn):
        conn.executemany(
            "INSERT INTO samples (ts, array, state, status, degraded, stripe_cache_size,"
            " speed_min_kb_s, speed_max_kb_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return len(rows)


def per_minute(conn: sqlite3.Connection) -> list[tuple[str, int]]:
    return conn.execute(
        "SELECT array, CAST(ts / 60 AS INTEGER) AS minute FROM samples GROUP BY array, minute"
    ).fetchall()


def test_a_new_file_gives_the_pages_of_downsampled_rows_back(tmp_path: Path):
    conn = db.connect(tmp_path / "mdboost.db")
    db.migrate(conn, PROJECT_ROOT / "migrations")
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == db.INCREMENTAL
    five_second_samples(conn, days=2)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before, _ = db.space_in_use(conn)
    minutes = per_minute(conn)
    assert rollup.downsample(conn, older_than=START + 2 * DAY_S) > 0
    after, in_use = db.space_in_use(conn)
    assert per_minute(conn) == minutes  # one sample of every minute is still there
    assert after <= 1.25 * in_use and after < before / 4, (before, after, in_use)
    assert (tmp_path / "mdboost.db-wal").stat().st_size <= db.WAL_LIMIT_BYTES


def test_a_file_from_before_is_converted_once_and_keeps_every_row(tmp_path: Path, caplog):
    path = tmp_path / "mdboost.db"
    old = old_file(path)
    five_second_samples(old, days=2)
    old.close()
    conn = db.connect(path)
    assert db.migrate(conn, PROJECT_ROOT / "migrations") == []
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0  # connect alone changes nothing
    before, _ = db.space_in_use(conn)
    minutes = per_minute(conn)
    with caplog.at_level(logging.INFO, logger="app.store.db"):
        rollup.downsample(conn, older_than=START + 2 * DAY_S)
    assert "converted" in caplog.text
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == db.INCREMENTAL
    after, in_use = db.space_in_use(conn)
    assert per_minute(conn) == minutes
    assert after <= 1.25 * in_use and after < before / 4, (before, after, in_use)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_no_conversion_without_room_for_the_copy_and_nothing_lost(small_disk: SmallDisk, caplog):
    """A full NAS volume: VACUUM would need room for a copy; wait, say so, keep every row."""
    path = small_disk.path / "mdboost.db"
    old = old_file(path)
    five_second_samples(old, days=0.1)
    old.close()
    conn = db.connect(path)
    count = conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    small_disk.fill()
    with caplog.at_level(logging.WARNING, logger="app.store.db"):
        assert db.give_back_space(conn) == 0
    assert "not converting" in caplog.text and "MB free" in caplog.text
    assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    assert conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == count
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("make", [old_file, lambda path: db.connect(path)])
def test_giving_space_back_twice_changes_nothing(tmp_path: Path, make):
    conn = make(tmp_path / "mdboost.db")
    db.migrate(conn, PROJECT_ROOT / "migrations")
    db.give_back_space(conn)
    assert db.give_back_space(conn) == 0
    assert conn.execute("PRAGMA freelist_count").fetchone()[0] == 0
