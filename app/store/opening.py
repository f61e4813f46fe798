"""The database file at start and beside the running server: refuse one from a newer mdboost,
move a damaged one aside and start afresh, and copy a live one consistently (`mdboost backup`)."""

import contextlib
import fcntl
import json
import logging
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from app.store import db

log = logging.getLogger(__name__)

SIDE_FILES = ("-wal", "-shm")  # SQLite's own files beside the database, named after it
# SQLITE_CORRUPT ("malformed") and SQLITE_NOTADB ("file is not a database"): damage, not a lock.
DAMAGED = (11, 26)


class NewerDatabase(Exception):
    """The file holds migrations this build does not know: a newer mdboost wrote it."""


class AnotherServer(Exception):
    """Another mdboost serves this database: two would undo each other's boosts."""


@dataclass(frozen=True)
class ServerLock:
    """This process's hold on its database: an fcntl lock that ends with the process, kill -9
    included, so a crash never leaves a stale lock behind."""

    path: Path
    fd: int

    def release(self) -> None:
        os.close(self.fd)


def lock_server(database: Path) -> ServerLock:
    """Take the one-server lock beside `database` (NAME.lock, 0600, holding the pid), or raise
    AnotherServer naming the pid that holds it. Before anything reads or writes the kernel."""
    path = database.with_name(database.name + ".lock")
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise AnotherServer(
            f"another mdboost (pid {holder}) is serving {database}: two servers on one "
            "database would undo each other's boosts; stop that one first"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):  # a full disk: the lock holds without the pid in it
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return ServerLock(path, fd)


@dataclass(frozen=True)
class MovedAside:
    """A damaged database this start moved aside (the page and the log say so)."""

    path: Path  # where the damaged file now is
    reason: str  # what PRAGMA quick_check (or opening it) said
    ts: float  # wall time of the move
    salvaged: int = 0  # rows of history read from it into the fresh database


def known_migrations(migrations_dir: Path) -> list[str]:
    return sorted(p.name for p in migrations_dir.glob("[0-9][0-9][0-9][0-9]_*.sql"))


def refuse_newer(path: Path, migrations_dir: Path) -> None:
    """Raise NewerDatabase when `path` records a migration this build lacks. The file is opened
    read-only and immutable (no WAL, no -shm created, not one byte written), so a refused file
    stays exactly as the newer mdboost left it."""
    if not path.exists() or path.stat().st_size == 0:
        return
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return  # not readable as a database: the damage check decides
    try:
        applied = [r[0] for r in conn.execute("SELECT name FROM schema_migrations")]
    except sqlite3.Error:
        return  # a new file, or a damaged one: the damage check decides
    finally:
        conn.close()
    known = known_migrations(migrations_dir)
    unknown = sorted(set(applied) - set(known))
    if unknown:
        raise NewerDatabase(
            f"{path} was written by a newer mdboost: it has schema migration {unknown[-1]}, "
            f"and this version knows up to {known[-1] if known else 'none'}. Run that newer "
            "version again, or move the file away to start with an empty history; "
            "mdboost left the file untouched"
        )


def quick_check(path: Path, timeout: float = 10.0) -> str | None:
    """None when the file opens and PRAGMA quick_check says ok, else what was wrong."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(path, timeout=timeout)
        try:
            rows = [r[0] for r in conn.execute("PRAGMA quick_check(5)")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:
        # Only a damaged file is moved aside: a locked, unreadable or busy one raises, and
        # start-up stops with SQLite's own words, the file untouched.
        if getattr(error, "sqlite_errorcode", 0) & 0xFF not in DAMAGED:
            raise
        return str(error)
    return None if rows == ["ok"] else "; ".join(rows)


def move_aside_if_damaged(
    path: Path, now: float | None = None, timeout: float = 10.0
) -> MovedAside | None:
    """A file that fails quick_check is renamed, with its WAL, to NAME.damaged-YYYYmmddTHHMMSSZ
    (kept for the owner or a recovery tool), so that a fresh database starts in its place."""
    reason = quick_check(path, timeout)
    if reason is None:
        return None
    now = time.time() if now is None else now
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    os.rename(path, aside)
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.rename(side, Path(f"{aside}{suffix}"))
    log.error(
        "the database %s is damaged (%s): moved it aside to %s and started a fresh one; "
        "the history before now is only in the moved file",
        path,
        reason,
        aside,
    )
    return MovedAside(aside, reason, now)


def last_moved_aside(conn: sqlite3.Connection) -> MovedAside | None:
    """The last move this database started with (a fresh file's first event), while the moved
    file is still there: the owner who deleted it has dealt with it (read once, at start)."""
    row = conn.execute(
        "SELECT ts, detail FROM events WHERE kind = 'database_moved_aside' ORDER BY id DESC"
    ).fetchone()
    if row is None:
        return None
    detail = json.loads(row[1])
    moved = MovedAside(Path(detail["path"]), detail["reason"], row[0], detail.get("salvaged", 0))
    return moved if moved.path.exists() else None


# The history a damaged file gives back, parents first (samples and events name their run).
SALVAGED_TABLES = ("runs", "samples", "events")
SALVAGE_CHUNK_ROWS = 2000


def salvage_history(moved: MovedAside, conn: sqlite3.Connection) -> MovedAside:
    """Copy every row of history still readable in the moved-aside file into the fresh one,
    with its id: a chunk of rows that cannot be read as a whole is read row by row, and a
    row SQLite cannot read stays behind. The moved file is opened read-only, untouched."""
    source = sqlite3.connect(f"{moved.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    salvaged = 0
    conn.execute("PRAGMA foreign_keys=OFF")  # a sample whose run was on a lost page stays
    try:
        for table in SALVAGED_TABLES:
            salvaged += _salvage_table(source, conn, table)
    finally:
        conn.execute("PRAGMA foreign_keys=ON")
        source.close()
    if salvaged:
        log.warning("salvaged %d rows of history from %s", salvaged, moved.path)
    return MovedAside(moved.path, moved.reason, moved.ts, salvaged)


def _salvage_table(source: sqlite3.Connection, conn: sqlite3.Connection, table: str) -> int:
    try:
        theirs = {row[1] for row in source.execute(f"PRAGMA table_info({table})")}
        last = source.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0
    except sqlite3.DatabaseError as error:
        log.warning("nothing of %s can be salvaged: %s", table, error)
        return 0
    columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table})") if row[1] in theirs]
    select = f"SELECT {', '.join(columns)} FROM {table}"
    insert = (
        f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) "
        f"VALUES ({', '.join('?' * len(columns))})"
    )
    copied = 0
    for start in range(0, last + 1, SALVAGE_CHUNK_ROWS):
        end = start + SALVAGE_CHUNK_ROWS
        try:
            rows = source.execute(
                f"{select} WHERE rowid >= ? AND rowid < ?", (start, end)
            ).fetchall()
        except sqlite3.DatabaseError:
            rows = []
            for rowid in range(start, end):
                with contextlib.suppress(sqlite3.DatabaseError):
                    rows += source.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchall()
        if rows:
            with db.write_transaction(conn):
                copied += conn.executemany(insert, rows).rowcount
    return copied


def backup(source: Path, target: Path, pages_per_step: int = 1024) -> int:
    """A consistent copy of a live database with SQLite's online backup API, written to a
    temporary name beside `target` and renamed into place; bytes written. The server keeps
    writing meanwhile: a step that sees a write starts the copy again (sqlite3 backup docs)."""
    if not source.exists():
        raise FileNotFoundError(f"no database at {source}")
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    src = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst, pages=pages_per_step)
            dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            check = dst.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            dst.close()
    finally:
        src.close()
    if check != "ok":
        partial.unlink(missing_ok=True)
        raise sqlite3.DatabaseError(f"the copy failed its check: {check}")
    os.chmod(partial, 0o600)  # it holds notification secrets, like the database
    os.replace(partial, target)
    return target.stat().st_size
