"""SQLite: connect (WAL, busy_timeout), apply numbered migrations from migrations/, and give
the space of deleted rows back to the filesystem (incremental auto-vacuum)."""

import contextlib
import glob
import logging
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

log = logging.getLogger(__name__)

# The names the layers above the store give a connection and its errors: only app/store imports
# sqlite3, the rest holds a connection it was handed and passes it back to the store's functions.
Connection: TypeAlias = sqlite3.Connection
Error: TypeAlias = sqlite3.Error

SQLITE_FULL = 13  # "database or disk is full" (sqlite.org/rescode.html#full)
INCREMENTAL = 2  # PRAGMA auto_vacuum's value for incremental (pragma.html#pragma_auto_vacuum)
WAL_LIMIT_BYTES = 4 * 1024 * 1024
VACUUM_STEP_PAGES = 2048  # 8 MiB of 4 KiB pages per step, checkpointed between steps


def make_private(path: Path) -> None:
    """The database holds notification URLs with their tokens and SMTP passwords:
    its folder is created 0700 and the file 0600 whatever the umask, so SQLite gives its WAL and
    SHM the same mode (it copies the database's); an existing looser file of the database's own
    (mdboost.db, -wal, -shm, backups named after it) is tightened, with a log line."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
        os.chmod(path.parent, 0o700)  # mkdir's mode passes through the umask
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    for own in sorted(path.parent.glob(glob.escape(path.name) + "*")):
        loose = stat.S_IMODE(own.lstat().st_mode)
        if not own.is_file() or own.is_symlink() or not loose & 0o077:
            continue
        try:
            os.chmod(own, loose & 0o700)
        except OSError as error:  # another owner's file, a read-only mount: say so, go on
            log.error("cannot tighten %s (%04o): %s", own, loose, error.strerror or error)
        else:
            log.warning(
                "tightened %s from %04o to %04o: it holds secrets", own, loose, loose & 0o700
            )


# A request's own connection lives for one request: its cache only needs the pages one query
# reuses (the file's pages stay in the kernel's cache). 512 KiB filled and freed by every page
# load left about 0.5 MiB more in the server's heap after the polls.
REQUEST_CACHE_KIB = 128


def connect(path: Path, cache_kib: int = 512) -> sqlite3.Connection:
    """Open the database in autocommit mode; writers use explicit BEGIN IMMEDIATE. The page
    cache holds at most `cache_kib` (SQLite's default is 2 MiB: small, bounded RSS on a NAS)."""
    if str(path) != ":memory:":
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    conn.row_factory = sqlite3.Row
    if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        # A new file, before its first table: it keeps a map of its pages, so that free ones can
        # be given back (give_back_space converts an older file once). Only then: on an existing
        # file the pragma writes, and a full disk refuses it.
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    conn.execute("PRAGMA journal_mode=WAL")
    _per_connection(conn, cache_kib)
    return conn


def connect_for_request(path: Path) -> sqlite3.Connection:
    """A request's own short-lived connection to the file start-up opened with connect(): WAL
    stays set in the file (pragma.html#pragma_journal_mode), so only the per-connection settings
    are made: four statements where connect() runs seven, on every request. mode=rw: a request
    never creates the file (start-up does, 0600); a missing one is an error, not an empty
    database."""
    uri = f"{path.resolve().as_uri()}?mode=rw"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=10)
    conn.row_factory = sqlite3.Row
    _per_connection(conn, REQUEST_CACHE_KIB)
    return conn


def _per_connection(conn: sqlite3.Connection, cache_kib: int) -> None:
    """What each connection sets for itself; sqlite3.connect's timeout=10 is the busy timeout."""
    # A checkpoint that empties the WAL also shrinks its file back to this (pragma.html).
    conn.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
    # FULL: a committed sample or journal row survives a power cut, not only kill -9.
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute(f"PRAGMA cache_size={-int(cache_kib)}")  # negative: KiB, not pages


def checkpoint(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the file where no reader needs it, so the next write reuses the WAL's
    room from its start rather than growing it (pragma.html#pragma_wal_checkpoint)."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def release_memory(conn: sqlite3.Connection) -> None:
    """Free the connection's page cache and what else SQLite can (pragma.html#pragma_shrink_memory).
    After a one-time big read (start-up's forecasts from a long run, the hourly maintenance) a
    long-lived connection would keep up to cache_size of pages it will not read again: 0.6 MiB
    of the server's RSS after start. The next reads fill it with what they need."""
    conn.execute("PRAGMA shrink_memory")


def disk_full(error: BaseException) -> bool:
    """Whether a database error is SQLite's SQLITE_FULL (its extended codes share the low byte)."""
    return getattr(error, "sqlite_errorcode", 0) & 0xFF == SQLITE_FULL


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


def give_back_space(conn: sqlite3.Connection) -> int:
    """Return the file's free pages to the filesystem and empty the WAL; bytes given back.
    All of give_back_steps at once (the sampler takes them one at a time)."""
    before = _file_bytes(conn)
    for _ in give_back_steps(conn):
        pass
    return before - _file_bytes(conn)


def give_back_steps(conn: sqlite3.Connection) -> Iterator[None]:
    """Return the file's free pages to the filesystem and empty the WAL, one step of
    VACUUM_STEP_PAGES at a time, so that whoever drives it may sample or stop between steps.

    A file made before incremental auto-vacuum is converted once, by a VACUUM that
    copies the pages in use: only when the database's folder and the temporary folder both have
    room for that copy, else it waits for the next call. Errors are logged, never raised: the
    space comes back next time, and the samples must go on.
    """
    try:
        if conn.execute("PRAGMA auto_vacuum").fetchone()[0] != INCREMENTAL:
            _convert(conn)
            yield
        else:
            while conn.execute("PRAGMA freelist_count").fetchone()[0]:
                # One page per step of the statement: fetchall() runs it to the end.
                conn.execute(f"PRAGMA incremental_vacuum({VACUUM_STEP_PAGES})").fetchall()
                conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                yield
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    except sqlite3.Error as error:
        log.warning("cannot give the database's free space back yet: %s", error)


@dataclass(frozen=True)
class Size:
    """What the database takes on disk, measured by the sampler's maintenance (app.live)."""

    file_bytes: int  # the main file, its WAL and shared-memory file
    measured_at: float  # wall time


def measure(conn: sqlite3.Connection, now: float) -> Size:
    file_bytes = _file_bytes(conn)
    path = _main_file(conn)
    for suffix in ("-wal", "-shm") if path is not None else ():
        with contextlib.suppress(FileNotFoundError):
            file_bytes += Path(f"{path}{suffix}").stat().st_size
    return Size(file_bytes, now)


def space_in_use(conn: sqlite3.Connection) -> tuple[int, int]:
    """(bytes the main file takes, bytes its pages in use take)."""
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    in_use = conn.execute("PRAGMA page_count").fetchone()[0]
    in_use -= conn.execute("PRAGMA freelist_count").fetchone()[0]
    return _file_bytes(conn), in_use * page_size


def _file_bytes(conn: sqlite3.Connection) -> int:
    path = _main_file(conn)
    return path.stat().st_size if path is not None else 0


def _main_file(conn: sqlite3.Connection) -> Path | None:
    for row in conn.execute("PRAGMA database_list"):
        if row[1] == "main" and row[2]:
            return Path(row[2])
    return None  # an in-memory database


def _convert(conn: sqlite3.Connection) -> None:
    """VACUUM rewrites the file with auto_vacuum=INCREMENTAL (set at connect). It builds the
    copy in a temporary file, then writes it through the WAL: room for it twice is needed."""
    path = _main_file(conn)
    if path is None:
        return
    _, in_use = space_in_use(conn)
    copy = in_use + in_use // 10 + (1 << 20)
    # The WAL grows by a copy beside the file, the temporary file is one in the temporary folder.
    folders = (path.parent, Path(tempfile.gettempdir()))
    needed: dict[int, int] = {}
    for folder in folders:
        needed[folder.stat().st_dev] = needed.get(folder.stat().st_dev, 0) + copy
    for folder in folders:
        free, wanted = shutil.disk_usage(folder).free, needed[folder.stat().st_dev]
        if free < wanted:
            log.warning(
                "not converting %s to incremental auto-vacuum yet: it needs %d MB free in %s, "
                "%d MB are; free pages stay in the file until then",
                path, wanted >> 20, folder, free >> 20,
            )  # fmt: skip
            return
    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
    started = time.monotonic()
    conn.execute("VACUUM")
    log.info(
        "converted %s to incremental auto-vacuum in %.1f s: %d MB in use",
        path, time.monotonic() - started, in_use >> 20,
    )  # fmt: skip
