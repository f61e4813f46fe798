"""The database holds notification URLs with their tokens and SMTP
passwords, so its directory is created 0700 and the file, its WAL and SHM and its backups are
0600 whatever the umask; an existing looser file is tightened at start with a log line. The
real server, started with the umask under test."""

import sqlite3
import stat
from pathlib import Path

import pytest

from tests.server import tree_server, wait_for


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def database_files(data: Path) -> dict[str, int]:
    return {p.name: mode(p) for p in sorted(data.iterdir())}


@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_a_new_database_is_private_whatever_the_umask(box, tmp_path, umask):
    data = tmp_path / "data"
    server = tree_server(box, tmp_path)
    server.umask = umask
    with server:
        # Ticks write through the WAL: wait until SQLite has made both its side files.
        wait_for(lambda: (data / "mdboost.db-wal").exists() and (data / "mdboost.db-shm").exists())
        assert mode(data) == 0o700
        assert database_files(data) == {
            "mdboost.db": 0o600,
            "mdboost.db-shm": 0o600,
            "mdboost.db-wal": 0o600,
            "mdboost.db.lock": 0o600,  # one server per database: its pid, read by a second
        }


def test_existing_loose_files_are_tightened_at_start_with_a_log_line(box, tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    db = sqlite3.connect(data / "mdboost.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    (data / "mdboost.db.bak").write_bytes(b"a backup of the database")
    loose = [data / "mdboost.db", data / "mdboost.db-wal", data / "mdboost.db-shm"]
    for path in [*loose, data / "mdboost.db.bak"]:
        path.chmod(0o644)
    db.close()
    (data / "unrelated.txt").write_text("not ours")
    (data / "unrelated.txt").chmod(0o644)
    server = tree_server(box, tmp_path)
    server.umask = 0o022
    with server:
        files = database_files(data)
    assert {name: m for name, m in files.items() if name.startswith("mdboost.db")} == {
        name: 0o600 for name in files if name.startswith("mdboost.db")
    }
    assert files["mdboost.db.bak"] == 0o600
    assert files["unrelated.txt"] == 0o644  # only the database's own files
    log = (tmp_path / "server.log").read_text()
    assert f"tightened {data / 'mdboost.db'} from 0644 to 0600" in log
    assert f"tightened {data / 'mdboost.db.bak'} from 0644 to 0600" in log
