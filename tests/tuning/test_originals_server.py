"""The originals outlive the database, over the real server: boost, kill -9, damage the tuning
journal's table, start again. The fresh database gets the session back from the originals file
(or from the damaged file), so revert puts every knob back; when the originals are truly gone,
md's own defaults go back and the page says so, never "Not tuned" over changed knobs."""

import sqlite3
import stat
from pathlib import Path

from app.store import opening
from tests.kernel_tree import KernelTree, act_like_md
from tests.notify.receivers import ALLOW_LOCAL, HttpReceiver
from tests.server import Server, tree_server, wait_for

BOOSTED = {
    "sys/block/md2/md/stripe_cache_size": "16384\n",
    "sys/block/md2/md/sync_speed_min": "600000\n",
    "sys/block/md2/md/sync_speed_max": "2000000\n",
    "sys/block/md2/queue/read_ahead_kb": "32768\n",
}
TUNING = {
    "MDBOOST_MAX_CACHE_MB": "1024",
    "MDBOOST_API_TOKEN": "test-token-for-originals-0123456789abcdef0123456789",
}


def tuning_server(tree: KernelTree, tmp_path: Path, **env: str) -> Server:
    return tree_server(tree, tmp_path, **TUNING, **env)


def zero_table_page(path: Path, table: str) -> None:
    """Zero the first page of one table, as a bad sector might: the file still opens."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    conn.close()
    Path(f"{path}-wal").unlink(missing_ok=True)
    Path(f"{path}-shm").unlink(missing_ok=True)
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\0" * page_size)
    assert opening.quick_check(path) is not None  # really damaged, or this test proves nothing


def boost_and_kill(box: KernelTree, tmp_path: Path) -> Path:
    server = tuning_server(box, tmp_path).start()
    assert server.request("POST", "/api/boost", {"on": True})[0] == 200
    server.kill()
    assert {path: box.read(path) for path in BOOSTED} == BOOSTED
    return tmp_path / "data" / "mdboost.db"


def test_the_originals_file_is_private_and_written_before_the_first_kernel_write(box, tmp_path):
    path = boost_and_kill(box, tmp_path)
    kept = Path(f"{path}.originals")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert '"original": "513"' in kept.read_text()  # md2's stripe cache before the boost
    with tuning_server(box, tmp_path) as again:
        assert again.request("POST", "/api/revert", {})[0] == 200
    assert not kept.exists()  # the revert is journaled: nothing to bring back next time


def test_a_damaged_journal_loses_no_original(box, tmp_path):
    before = box.snapshot()
    path = boost_and_kill(box, tmp_path)
    zero_table_page(path, "tuning_knobs")
    with tuning_server(box, tmp_path) as again:
        tuning = again.get("/api/tuning")
        # md2 still reshapes: the boost resumes, as the journal said
        assert tuning["active"] is True
        page = again.text("/")
        assert "Not tuned" not in page and "originals file" in page
        assert again.request("POST", "/api/revert", {})[0] == 200
    act_like_md(box, before)
    for knob in BOOSTED:
        assert box.read(knob) == before[knob].decode(), knob


def test_without_the_file_the_session_is_salvaged_from_the_moved_aside_database(box, tmp_path):
    before = box.snapshot()
    path = boost_and_kill(box, tmp_path)
    Path(f"{path}.originals").unlink()
    zero_table_page(path, "runs")  # damaged, but the journal's own tables still read
    with tuning_server(box, tmp_path) as again:
        assert again.get("/api/tuning")["active"] is True
        assert "damaged database" in again.text("/")
        assert again.request("POST", "/api/revert", {})[0] == 200
    act_like_md(box, before)
    for knob in BOOSTED:
        assert box.read(knob) == before[knob].decode(), knob


def test_when_the_originals_are_truly_lost_md_defaults_go_back_and_the_page_says_so(box, tmp_path):
    path = boost_and_kill(box, tmp_path)
    box.write("proc/sys/dev/raid/speed_limit_min", "12345")  # not mdboost's, but not md's either
    Path(f"{path}.originals").write_text('{"session_id": 1, "knobs": [{"ke')  # torn
    zero_table_page(path, "tuning_knobs")
    receiver = HttpReceiver().start()
    notify = {"MDBOOST_NOTIFY": f"http://{receiver.base}/hook", **ALLOW_LOCAL}
    with tuning_server(box, tmp_path, **notify) as again:
        assert again.get("/api/tuning")["active"] is False
        page = again.text("/")
        assert "original values of the knobs mdboost had changed are lost" in page
        # ... and loudly: a notification, since the owner may never open the page
        lost = b"original values of the knobs it changed are lost"
        wait_for(lambda: [r for r in receiver.taken() if lost in r.body], 30, "the notification")
    receiver.stop()
    assert box.read("sys/block/md2/md/stripe_cache_size") == "256\n"
    assert box.read("sys/block/md2/queue/read_ahead_kb") == "128\n"
    assert box.read("sys/block/md2/md/sync_speed_min") == "system\n"
    assert box.read("sys/block/md2/md/sync_speed_max") == "system\n"
    assert box.read("proc/sys/dev/raid/speed_limit_min") == "1000\n"
