"""The database file over the real server: a file from a newer mdboost is refused
untouched, a damaged one is moved aside and a fresh one starts, `mdboost backup` copies a live
one that restores, and the footer shows the retention and the size the sampler measured."""

import os
import re
import sqlite3
from pathlib import Path

import pytest

from app.store import db, opening
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree
from tests.server import runs_of, tree_server, wait_for
from tests.test_cli import mdboost

MIGRATIONS = PROJECT_ROOT / "migrations"


def server_env(tree: KernelTree, database: Path) -> dict[str, str]:
    return {
        **os.environ,
        "MDBOOST_PROC_ROOT": str(tree.proc),
        "MDBOOST_SYS_ROOT": str(tree.sys),
        "MDBOOST_DB": str(database),
    }


def test_a_database_from_a_newer_mdboost_is_refused_and_left_untouched(box, tmp_path: Path):
    path = tmp_path / "data" / "mdboost.db"
    conn = db.connect(path)
    db.migrate(conn, MIGRATIONS)
    conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_a_newer_mdboost.sql', 0)")
    conn.execute("INSERT INTO runs (array, action, started) VALUES ('md2', 'reshape', 1)")
    conn.close()
    os.chmod(path, 0o644)  # looser than mdboost makes it: a start would tighten it
    before = {p.name: (p.read_bytes(), p.stat().st_mode) for p in path.parent.iterdir()}
    result = mdboost("serve", "--host", "127.0.0.1", "--port", "0", env=server_env(box, path))
    assert result.returncode == 2, result.stderr
    assert "newer mdboost" in result.stderr and "9999_from_a_newer_mdboost.sql" in result.stderr
    assert "untouched" in result.stderr
    after = {p.name: (p.read_bytes(), p.stat().st_mode) for p in path.parent.iterdir()}
    assert after == before  # the same files, the same bytes, the same modes: no -wal, no -shm


def test_the_app_itself_refuses_a_newer_file_before_opening_it(tmp_path: Path):
    """Without the command (app.main's start-up), the same check runs first."""
    path = tmp_path / "mdboost.db"
    conn = db.connect(path)
    db.migrate(conn, MIGRATIONS)
    conn.execute("INSERT INTO schema_migrations VALUES ('9999_newer.sql', 0)")
    conn.close()
    before = path.read_bytes()
    try:
        opening.refuse_newer(path, MIGRATIONS)
    except opening.NewerDatabase as error:
        assert "9999_newer.sql" in str(error)
    else:
        raise AssertionError("a newer file was accepted")
    assert path.read_bytes() == before
    opening.refuse_newer(tmp_path / "absent.db", MIGRATIONS)  # nothing there: nothing to refuse


def damage(path: Path) -> bytes:
    """Overwrite every page after the first two with junk, as a failing disk or a torn copy
    might; the page of the schema stays, so the file still opens."""
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(2 * page, len(data), page):
        data[offset + 8 : offset + 200] = b"\xa5" * 192
    path.write_bytes(bytes(data))
    assert opening.quick_check(path) is not None  # really damaged, or this test proves nothing
    return bytes(data)


def test_a_damaged_database_is_moved_aside_and_a_fresh_one_starts(box, tmp_path: Path):
    with tree_server(box, tmp_path) as server:
        first = wait_for(lambda: runs_of(server).get("md2"), what="md2's run")
    path = tmp_path / "data" / "mdboost.db"
    assert not Path(f"{path}-wal").exists()  # the server's last close checkpointed
    damaged = damage(path)
    with tree_server(box, tmp_path) as server:
        # Monitoring goes on in the fresh file: the reshape is a run again.
        run = wait_for(lambda: runs_of(server).get("md2"), what="md2's run in the fresh file")
        page = server.text("/")
    aside = [p for p in path.parent.iterdir() if re.fullmatch(r"mdboost\.db\.damaged-\d{8}T\d{6}Z", p.name)]  # fmt: skip
    assert len(aside) == 1 and aside[0].read_bytes() == damaged
    assert opening.quick_check(path) is None
    assert run["started"] >= first["started"]
    log = (tmp_path / "server.log").read_text()
    assert f"moved it aside to {aside[0]}" in log and "is damaged" in log
    assert "The database was damaged" in page and aside[0].name in page
    # The notice outlives a restart while the moved file is there, and goes once it is not.
    with tree_server(box, tmp_path) as server:
        assert aside[0].name in server.text("/")
    aside[0].unlink()
    with tree_server(box, tmp_path) as server:
        assert "The database was damaged" not in server.text("/")


def test_backup_copies_a_live_database_that_restores(box, tmp_path: Path):
    live = tmp_path / "live"
    live.mkdir()
    with tree_server(box, live) as server:
        wait_for(lambda: runs_of(server).get("md2"), what="md2's run")
        env = server_env(box, live / "data" / "mdboost.db")
        result = mdboost("backup", str(tmp_path / "copy.db"), env=env)  # while it writes samples
        runs = server.get("/api/runs")["runs"]
        page = server.text("/")
    assert result.returncode == 0, result.stderr
    assert "copied" in result.stdout
    copy = tmp_path / "copy.db"
    assert opening.quick_check(copy) is None and oct(copy.stat().st_mode & 0o777) == "0o600"
    with sqlite3.connect(copy) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # one whole file
        samples = conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert samples > 0
    restored = tmp_path / "restored"
    (restored / "data").mkdir(parents=True)
    os.replace(copy, restored / "data" / "mdboost.db")
    with tree_server(box, restored) as server:
        again = server.get("/api/runs")["runs"]
    # Every run the live server listed is there, the open reshape carried on, not begun anew.
    assert {(r["id"], r["started"]) for r in runs} <= {(r["id"], r["started"]) for r in again}
    # The footer: the retention, and the size the sampler measured.
    assert "Samples kept 400 days" in page
    assert re.search(r"database \d+\.\d MB", page), page[-600:]


def test_backup_of_no_database_says_so(box, tmp_path: Path):
    result = mdboost("backup", str(tmp_path / "x.db"), env=server_env(box, tmp_path / "none.db"))
    assert result.returncode == 1 and "no database" in result.stderr
    assert not (tmp_path / "x.db").exists()


def test_a_locked_database_is_not_taken_for_a_damaged_one(tmp_path: Path):
    """Busy is not damaged: the check raises SQLite's error and moves nothing aside."""
    path = tmp_path / "mdboost.db"
    conn = db.connect(path)
    db.migrate(conn, MIGRATIONS)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("BEGIN EXCLUSIVE")  # another process holding the file
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            opening.move_aside_if_damaged(path, timeout=0.1)
    finally:
        conn.execute("ROLLBACK")
    assert [p.name for p in tmp_path.iterdir()] == ["mdboost.db"]
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all, " * 400)
    assert "not a database" in (opening.quick_check(garbage) or "")
