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
