from pathlib import Path

import pytest

from app.store import db
from tests import PROJECT_ROOT


def test_migrations_apply_once_and_a_second_run_changes_nothing(tmp_path: Path):
    conn = db.connect(tmp_path / "x.db")
    first = db.migrate(conn, PROJECT_ROOT / "migrations")
    assert first and first == sorted(first)
    schema = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    assert db.migrate(conn, PROJECT_ROOT / "migrations") == []
    assert conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == schema
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_failing_migration_leaves_no_trace(tmp_path: Path):
    migrations = tmp_path / "migrations"
    migrations.mkdir()
    (migrations / "0001_ok.sql").write_text("CREATE TABLE a (x INTEGER);\n")
    (migrations / "0002_bad.sql").write_text(
        "CREATE TABLE b (y INTEGER);\nINSERT INTO nowhere VALUES (1);\n"
    )
    conn = db.connect(tmp_path / "x.db")
    with pytest.raises(Exception, match="nowhere"):
        db.migrate(conn, migrations)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"schema_migrations", "a"}
    applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    assert applied == ["0001_ok.sql"]


def sqlite_memory_used() -> int:
    """Bytes SQLite holds in this process (sqlite3_memory_used, from the library _sqlite3 uses)."""
    import ctypes

    lib = ctypes.CDLL("libsqlite3.so.0")
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return int(lib.sqlite3_memory_used())


def test_release_memory_gives_back_the_pages_a_big_read_cached(tmp_path: Path):
    """A long-lived connection keeps up to cache_size (512 KiB) of the pages a one-time
    read touched; release_memory frees them, and the connection still reads."""
    conn = db.connect(tmp_path / "m.db")
    conn.execute("CREATE TABLE t (x BLOB)")
    with db.write_transaction(conn):
        conn.executemany("INSERT INTO t VALUES (zeroblob(1000))", [()] * 2000)  # ~2 MB
    assert conn.execute("SELECT COUNT(*), SUM(LENGTH(x)) FROM t").fetchone()[1] == 2_000_000
    full = sqlite_memory_used()
    db.release_memory(conn)
    released = sqlite_memory_used()
    assert full - released >= 400 * 1024  # most of the 512 KiB cache
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 2000


def test_the_page_cache_is_bounded(tmp_path: Path):
    """512 KiB of pages by default (SQLite's own is 2 MiB); less when asked."""
    assert db.connect(tmp_path / "m.db").execute("PRAGMA cache_size").fetchone()[0] == -512
    assert db.connect(tmp_path / "m.db", 64).execute("PRAGMA cache_size").fetchone()[0] == -64
