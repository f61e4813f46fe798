"""SQLite: connect (WAL, busy_timeout) and apply numbered migrations from migrations/."""

import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)


def connect(path: Path) -> sqlite3.Connection:
    """Open the database in autocommit mode; writers use explicit BEGIN IMMEDIATE."""
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    # FULL: a committed sample or journal row survives a power cut, not only kill -9.
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA cache_size=-512")  # KiB: small, bounded RSS on a NAS (default 2 MiB)
    return conn


@contextmanager
def write_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT; rolled back on any error (SQLite may already have done so:
    SQLITE_FULL ends the transaction itself, and a second ROLLBACK would hide the real error)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def migrate(conn: sqlite3.Connection, migrations_dir: Path) -> list[str]:
    """Apply each not-yet-applied NNNN_*.sql in order, with its bookkeeping row, atomically."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)"
    )
    done = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
    applied = []
    for script in sorted(migrations_dir.glob("[0-9][0-9][0-9][0-9]_*.sql")):
        if script.name in done:
            continue
        # executescript() would commit on its own; run statements one by one inside our transaction.
        with write_transaction(conn):
            for statement in _statements(script.read_text()):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, strftime('%s','now'))", (script.name,)
            )
        log.info("applied migration %s", script.name)
        applied.append(script.name)
    return applied


def _statements(sql: str) -> list[str]:
    """Split a migration into complete statements (sqlite3.complete_statement knows quoting)."""
    statements, current = [], ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return [s for s in statements if s.rstrip(";").strip()]
