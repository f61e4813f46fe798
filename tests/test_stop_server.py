"""How mdboost stops and starts beside itself, over the real server and a kernel tree: a second
server on the same database refuses to start and touches nothing, and SIGHUP reverts and exits
like SIGTERM."""

import signal
import subprocess
import time
from pathlib import Path

from app.store import db
from tests import PROJECT_ROOT
from tests.kernel_tree import KernelTree, act_like_md
from tests.server import Server, tree_server, wait_for
from tests.test_cli import mdboost

BOOSTED = {
    "sys/block/md2/md/stripe_cache_size": "16384\n",
    "sys/block/md2/md/sync_speed_min": "600000\n",
    "sys/block/md2/md/sync_speed_max": "2000000\n",
    "sys/block/md2/queue/read_ahead_kb": "32768\n",
}
TUNING = {
    "MDBOOST_MAX_CACHE_MB": "1024",
    "MDBOOST_API_TOKEN": "test-token-for-stops-0123456789abcdef",
}


def tuning_server(tree: KernelTree, tmp_path: Path, **env: str) -> Server:
    return tree_server(tree, tmp_path, **TUNING, **env)


def knobs(tree: KernelTree) -> dict[str, str]:
    return {path: tree.read(path) for path in BOOSTED}


def test_a_second_server_on_one_database_refuses_and_touches_nothing(box, tmp_path):
    before = box.snapshot()
    with tuning_server(box, tmp_path) as first:
        assert first.request("POST", "/api/boost", {"on": True})[0] == 200
        boosted = box.snapshot()
        second = tuning_server(box, tmp_path)
        assert first.process is not None
        result = mdboost(*second.args, env=second.env)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and f"another mdboost (pid {first.process.pid})" in lines[0]
        assert box.snapshot() == boosted  # the second one wrote no knob, nor reverted any
        assert first.get("/api/tuning")["active"] is True
    act_like_md(box, before)
    for path in BOOSTED:
        assert box.read(path) == before[path].decode(), path  # the first one's stop reverted


def test_sighup_reverts_and_exits(box, tmp_path):
    before = box.snapshot()
    server = tuning_server(box, tmp_path).start()
    assert server.request("POST", "/api/boost", {"on": True})[0] == 200
    assert knobs(box) == BOOSTED
    assert server.process is not None
    began = time.monotonic()
    server.process.send_signal(signal.SIGHUP)
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise AssertionError("SIGHUP did not stop mdboost within 15 s") from None
    assert time.monotonic() - began < 10
    act_like_md(box, before)
    for path in BOOSTED:
        assert box.read(path) == before[path].decode(), path
    assert "reverted 4 knobs to their originals" in (tmp_path / "server.log").read_text()


DAY_S = 86400


def month_of_samples(path: Path, now: float) -> int:
    """A 30-day database as a month of 5 s samples of md2 leaves it, none thinned yet."""
    conn = db.connect(path)
    db.migrate(conn, PROJECT_ROOT / "migrations")
    with db.write_transaction(conn):
        conn.execute(
            """
            WITH RECURSIVE t(ts) AS (SELECT ? UNION ALL SELECT ts + 5 FROM t WHERE ts < ?)
            INSERT INTO samples (array, ts, mono, state, action, percent, speed_kb_s)
            SELECT 'md2', ts, ts, 'active', 'reshape', (ts - ?) / ?, 80000 + ts % 977 FROM t
            """,
            (now - 31 * DAY_S, now - DAY_S, now - 31 * DAY_S, 31 * DAY_S / 100),
        )
    count: int = conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    conn.close()
    return count


def last_sample(server: Server) -> float:
    for line in server.text("/metrics").splitlines():
        if line.startswith("mdboost_sampler_last_success_timestamp_seconds "):
            return float(line.split()[1])
    raise AssertionError("no mdboost_sampler_last_success_timestamp_seconds in /metrics")


def test_sigterm_in_the_middle_of_a_months_maintenance_reverts_and_exits_quickly(box, tmp_path):
    """The hourly maintenance of a 30-day database took 43 s in one transaction: the revert
    waited for it, and compose's SIGKILL at 15 s left the boost in the kernel."""
    before = box.snapshot()
    path = tmp_path / "data" / "mdboost.db"
    path.parent.mkdir(mode=0o700)
    assert month_of_samples(path, time.time()) > 500_000
    log = tmp_path / "server.log"
    server = tuning_server(box, tmp_path, MDBOOST_SAMPLE_SECONDS="1").start()
    assert server.request("POST", "/api/boost", {"on": True})[0] == 200
    assert knobs(box) == BOOSTED
    wait_for(lambda: "maintenance: thinning" in log.read_text(), 30, "the maintenance to begin")
    # Sampling goes on while it runs: two more ticks are recorded.
    first = last_sample(server)
    wait_for(lambda: last_sample(server) > first, 10, "a tick during the maintenance")
    assert "maintenance: " in log.read_text() and " thinned in " not in log.read_text()
    assert server.process is not None
    began = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    try:
        server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.process.kill()
        raise AssertionError("SIGTERM did not stop mdboost within 30 s") from None
    assert time.monotonic() - began < 10
    act_like_md(box, before)
    for path_ in BOOSTED:
        assert box.read(path_) == before[path_].decode(), path_
